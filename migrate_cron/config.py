"""Where the database is and what the tables are called.

The URL comes from ``--database-url`` or ``MIGRATE_CRON_DATABASE_URL``; the default is an
SQLite file in the current directory so a new user can try everything without a server.
Passwords never leave this module unmasked: everything that prints a URL uses ``mask_url``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Settings", "encode_password_at", "mask_url", "url_secret", "validate_prefix"]

DATABASE_URL_ENV = "MIGRATE_CRON_DATABASE_URL"
TABLE_PREFIX_ENV = "MIGRATE_CRON_TABLE_PREFIX"
REGISTRY_ENV = "MIGRATE_CRON_REGISTRY"
DEFAULT_REGISTRY = "migrate-cron.toml"

# userinfo password: everything between "user:" and the last "@" of the URL token (a raw "@"
# in a password is common in copy-pasted URLs); and password=… in a query string.
_PASSWORD_RE = re.compile(
    r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*:)(?P<pw>\S*)(?P<at>@)(?=[^@\s]*(?:\s|$))"
)
_QUERY_PASSWORD_RE = re.compile(
    r"(?P<head>(?:[?&][A-Za-z_]*(?:password|passwd|pwd|secret|token)|"
    r"(?:password|passwd|pwd)%3D|(?:%20|[ +])(?:password|passwd|pwd)=)=?)(?P<pw>[^&\s%]*)",
    re.I,
)


@dataclass(frozen=True)
class Settings:
    """Connection settings shared by every command that touches the database."""

    database_url: str
    table_prefix: str = ""

    @property
    def safe_url(self) -> str:
        return mask_url(self.database_url)


def encode_password_at(url: str) -> str:
    """Percent-encode a raw ``@`` in the URL's password (SQLAlchemy would otherwise read its
    tail as the host name and the driver would print it in its error message)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    userinfo, at, hostpart = rest.rpartition("@")
    if at and "@" in userinfo and "/" not in hostpart.split("?")[0].split("/")[0]:
        user, colon, password = userinfo.partition(":")
        rest = f"{user.replace('@', '%40')}{colon}{password.replace('@', '%40')}@{hostpart}"
    return f"{scheme}://{rest}"


def mask_url(text: str) -> str:
    """Replace every URL password in ``text`` with ``***`` (works on whole messages too)."""
    text = _PASSWORD_RE.sub(lambda m: f"{m.group('head')}***{m.group('at')}", text)
    return _QUERY_PASSWORD_RE.sub(lambda m: f"{m.group('head')}***", text)


def validate_prefix(prefix: str) -> str:
    """Table prefixes end up in DDL: allow only identifier characters."""
    if prefix and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,30}", prefix):
        from migrate_cron.errors import UsageError

        raise UsageError(
            f"table prefix {prefix!r} is not a valid identifier (letters, digits, underscore)"
        )
    return prefix


#: Query parameters that name a file or a setting, not a secret, although their names look so.
_NOT_SECRET_PARAMS = frozenset({"passfile", "sslkey", "sslcert", "sslrootcert", "sslcrl"})
_SECRET_NAME_RE = re.compile(r"(?i)(pass|pwd|secret|token|api_?key|credential)")
_SECRET_ASSIGNMENT_RE = re.compile(r"(?i)(pass(word|wd)?|pwd|secret|token)\s*=")


def url_secret(url: str) -> str | None:
    """Where ``url`` carries a secret, in words (None if it carries none).

    Checked wherever a URL would be *written* (a crontab line, the registry): a password after
    the user name, any query parameter whose name says password/secret/token (``password=``,
    ``sslpassword=``, ``passwd=``, ``PGPASSWORD=`` …, in any case), or such an assignment
    hidden inside another parameter (``options=-c password=…``), percent-encoded or not.
    """
    from urllib.parse import parse_qsl, unquote, urlsplit

    text = encode_password_at(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is not None and parts.password:
        return "a password after the user name"
    if parts is not None and parts.netloc and "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        if ":" in unquote(userinfo):
            return "a password after the user name"
    query = parts.query if parts is not None else text.partition("?")[2]
    for key, value in parse_qsl(query, keep_blank_values=True):
        name = key.strip().lower()
        if name not in _NOT_SECRET_PARAMS and _SECRET_NAME_RE.search(name):
            return f"a {key!r} parameter"
        if _SECRET_ASSIGNMENT_RE.search(unquote(value)):
            return f"a password inside the {key!r} parameter"
    return None
