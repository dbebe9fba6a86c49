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
    DEFAULT_REGISTRY,
    REGISTRY_ENV,
    TABLE_PREFIX_ENV,
    Settings,
    validate_prefix,
)
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.registry import JobSpec
    from migrate_cron.store import Store
    from migrate_cron.store.timeouts import Use

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


def open_store(database_url: str, table_prefix: str = "", use: Use | None = None) -> Store:
    """Open the store for a command (``store.opening``: short time limits unless ``use``
    says otherwise; a missing SQLite file is not created)."""
    from migrate_cron.store.opening import open_for_person

    return open_for_person(database_url, table_prefix, use)


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


#: The window for done counts and run times, the same for `status`, `metrics` and `web`: the
#: last hour is what an alert on run time compares against (a Prometheus rule's window too).
DEFAULT_WINDOW = "1h"
WindowOption = Annotated[
    str | None,
    typer.Option(
        "--window",
        help=f"Window for done counts and run times (e.g. 1h, 24h, 7d; default {DEFAULT_WINDOW}).",
        show_default=False,
    ),
]
#: ``--since`` was this option's first name on `status` and `metrics`: still taken, never shown
#: (on `jobs list`, --since filters the rows by when they were created).
SinceAlias = Annotated[
    str | None, typer.Option("--since", hidden=True, help="The old name of --window.")
]


def window_seconds(window: str | None, since: str | None) -> float:
    """The window in seconds; an error names the flag the user typed."""
    from migrate_cron.errors import UsageError
    from migrate_cron.ops.durations import parse_duration

    if window is not None and since is not None:
        raise UsageError("--since is the old name of --window: give one of them")
    flag, text = ("--since", since) if since is not None else ("--window", window)
    seconds = parse_duration(text or DEFAULT_WINDOW, option=flag)
    if seconds <= 0:
        raise UsageError(f"{flag}: the window must be longer than 0s")
    return seconds
