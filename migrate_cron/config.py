"""Where the database is and what the tables are called.

The URL comes from ``--database-url`` or ``MIGRATE_CRON_DATABASE_URL``; the default is an
SQLite file in the current directory so a new user can try everything without a server.
Passwords never leave this module unmasked: everything that prints a URL uses ``mask_url``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_DATABASE_URL = "sqlite:///migrate-cron.db"
DATABASE_URL_ENV = "MIGRATE_CRON_DATABASE_URL"
TABLE_PREFIX_ENV = "MIGRATE_CRON_TABLE_PREFIX"
REGISTRY_ENV = "MIGRATE_CRON_REGISTRY"
DEFAULT_REGISTRY = "migrate-cron.toml"

# Driverless URLs would select drivers we do not ship (psycopg2, mysqlclient).
_DRIVER_DEFAULTS = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
}

_PASSWORD_RE = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*:)(?P<pw>[^@\s]*)(?P<at>@)")


@dataclass(frozen=True)
class Settings:
    """Connection settings shared by every command that touches the database."""

    database_url: str = DEFAULT_DATABASE_URL
    table_prefix: str = ""

    @property
    def safe_url(self) -> str:
        return mask_url(self.database_url)


def normalize_url(url: str) -> str:
    """Pick the drivers we install when the URL names none."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    if scheme in _DRIVER_DEFAULTS:
        return f"{_DRIVER_DEFAULTS[scheme]}://{rest}"
    return url


def mask_url(text: str) -> str:
    """Replace every URL password in ``text`` with ``***`` (works on whole messages too)."""
    return _PASSWORD_RE.sub(lambda m: f"{m.group('head')}***{m.group('at')}", text)


def validate_prefix(prefix: str) -> str:
    """Table prefixes end up in DDL: allow only identifier characters."""
    if prefix and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,30}", prefix):
        from migrate_cron.errors import UsageError

        raise UsageError(
            f"table prefix {prefix!r} is not a valid identifier (letters, digits, underscore)"
        )
    return prefix
