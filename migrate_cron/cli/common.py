"""Options and output helpers shared by all commands.

Conventions: data on stdout, human messages on stderr; ``--json`` where a script reads the
output; exit 0 ok, 1 findings/failure, 2 usage. Heavy modules (SQLAlchemy, the store) are
imported inside functions so that ``migrate-cron enqueue`` starts fast from cron.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from migrate_cron.config import (
    DATABASE_URL_ENV,
    DEFAULT_DATABASE_URL,
    DEFAULT_REGISTRY,
    REGISTRY_ENV,
    TABLE_PREFIX_ENV,
    Settings,
    validate_prefix,
)

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.registry import JobSpec
    from migrate_cron.store import Store

DatabaseUrl = Annotated[
    str,
    typer.Option(
        "--database-url",
        envvar=DATABASE_URL_ENV,
        help="SQLAlchemy URL of the queue database (postgresql://, mariadb://, mysql://, sqlite:///).",
        show_default=True,
    ),
]
TablePrefix = Annotated[
    str,
    typer.Option(
        "--table-prefix",
        envvar=TABLE_PREFIX_ENV,
        help="Prefix for our table names, if you already have a table called 'job'.",
    ),
]
RegistryPath = Annotated[
    str,
    typer.Option("--registry", "-r", envvar=REGISTRY_ENV, help="The job registry file."),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]

DEFAULT_URL = DEFAULT_DATABASE_URL
DEFAULT_REGISTRY_PATH = DEFAULT_REGISTRY


def settings(database_url: str, table_prefix: str = "") -> Settings:
    return Settings(database_url=database_url, table_prefix=validate_prefix(table_prefix))


def open_store(database_url: str, table_prefix: str = "") -> Store:
    """Open the store for a command; errors surface as DatabaseUnavailable on first use.

    A SQLite file that does not exist is not created (only ``db upgrade`` creates one): the
    first use raises ``SchemaMissing`` ("no database yet"), so a ``status`` run in the wrong
    directory leaves no stray empty database behind."""
    from migrate_cron.store import open_store as _open

    s = settings(database_url, table_prefix)
    return _open(s.database_url, prefix=s.table_prefix, sqlite_must_exist=True)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


def stdout_console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=not sys.stdout.isatty())


#: The version of every ``--json`` document's shape (docs/json.md); bumped on a breaking change.
JSON_SCHEMA_VERSION = 1


def print_json(data: Mapping[str, Any]) -> None:
    """Write one JSON document to stdout: always an object that starts with
    ``schema_version`` (a script can check it, and a list could not grow a field), times in
    RFC 3339 UTC with ``Z``."""
    document = {"schema_version": JSON_SCHEMA_VERSION, **data}
    sys.stdout.write(json.dumps(document, indent=2, default=_json_default, ensure_ascii=False))
    sys.stdout.write("\n")


def _json_default(value: Any) -> Any:
    from datetime import UTC, date, datetime, timedelta

    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def info(message: str) -> None:
    """A human message on stderr."""
    stderr_console().print(message, highlight=False)


OptionalRegistry = Annotated[
    str | None,
    typer.Option(
        "--registry",
        "-r",
        envvar=REGISTRY_ENV,
        help=f"The job registry (schedules, next slots). Default: {DEFAULT_REGISTRY} if present.",
        show_default=False,
    ),
]


def optional_registry(path: str | None) -> list[JobSpec]:
    """The registry's jobs; an absent default file means "no registry", an absent explicit
    one is an error."""
    from migrate_cron.registry import load_registry

    if path is None:
        if not os.path.exists(DEFAULT_REGISTRY):
            return []
        path = DEFAULT_REGISTRY
    return list(load_registry(path))


def reflow(doc: str | None) -> str | None:
    """A docstring as --help text: paragraphs kept, the line breaks inside them dropped (rich
    would otherwise keep each source line break in the terminal)."""
    import inspect

    if not doc:
        return doc
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


TzOption = Annotated[
    str | None,
    typer.Option(
        "--tz",
        help="Timezone cron runs in for files without CRON_TZ (default: this host's).",
        metavar="ZONE",
    ),
]


class CronChoice(StrEnum):
    """The ``--cron`` choices (the same names as ``migrate_cron.crontab.flavour.Cron``, kept
    here so that a command's options load without the parser)."""

    debian = "debian"
    cronie = "cronie"
    busybox = "busybox"


CronOption = Annotated[
    CronChoice,
    typer.Option(
        "--cron",
        help="Which cron reads the files: debian (Vixie, Debian/Ubuntu), cronie "
        "(RHEL/Fedora/Arch: CRON_TZ, ~ ranges) or busybox (Alpine). See "
        "docs/cron-flavours.md.",
        case_sensitive=False,
    ),
]
