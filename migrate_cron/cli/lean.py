"""The lean path for the one command cron runs every minute on every host.

A crontab line switched by ``migrate --to enqueue`` runs
``migrate-cron enqueue NAME --quiet --registry PATH [--database-url URL] [--table-prefix P]``.
Through Typer that call spends most of its time importing Typer, Rich (and Pydantic, which
Typer brings) and every command module, before any work. Here the command line is read with
no import beyond the standard library, and the work is the same function the Typer command
calls (``producer.enqueue.enqueue_slot``, said by ``cli.enqueue_output``): same rows, spool,
output and exit codes.

Only a command line this module fully understands takes this path; anything else — ``--help``,
``--json``, fan-out (``--ref``/``--stdin``), an unknown or repeated option, a missing value,
``MIGRATE_CRON_DEBUG`` — returns ``None`` and the caller runs the full CLI, so every message a
person reads there (usage errors, help) is unchanged. Values are resolved as Typer resolves
them: the option, else its environment variable when not empty, else the default.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from migrate_cron.config import DATABASE_URL_ENV, DEFAULT_REGISTRY, REGISTRY_ENV, TABLE_PREFIX_ENV
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

SPOOL_ENV = "MIGRATE_CRON_SPOOL"  # = producer.spool.SPOOL_ENV, not imported: it is not free
DEBUG_ENV = "MIGRATE_CRON_DEBUG"

#: Options that take a value, by every spelling Typer accepts for them here.
_VALUE_OPTIONS = {
    "--slot": "slot",
    "--registry": "registry",
    "-r": "registry",
    "--database-url": "database_url",
    "--table-prefix": "table_prefix",
    "--spool": "spool",
}
_QUIET = ("--quiet", "-q")
#: Option → environment variable, as declared on the Typer command.
_ENV = {
    "registry": REGISTRY_ENV,
    "database_url": DATABASE_URL_ENV,
    "table_prefix": TABLE_PREFIX_ENV,
    "spool": SPOOL_ENV,
}


@dataclass(frozen=True)
class LeanEnqueue:
    """A plain ``enqueue NAME`` command line, its values resolved."""

    name: str
    slot: str
    quiet: bool
    database_url: str
    table_prefix: str
    registry: str
    spool_dir: Path | None


def parse(argv: Sequence[str], environ: Mapping[str, str]) -> LeanEnqueue | None:
    """``argv`` (without the program name) as a plain ``enqueue NAME``, or ``None`` when the
    full CLI must handle it. Refusing is always safe; accepting must match Typer exactly."""
    command = argv[0] if argv else ""
    if len(argv) < 2 or command != "enqueue" or environ.get(DEBUG_ENV):  # vocabulary: argv
        return None
    name: str | None = None
    quiet = False
    values: dict[str, str] = {}
    rest = iter(argv[1:])
    for token in rest:
        if token in _QUIET:
            quiet = True
        elif token.startswith("-"):
            option, eq, value = token.partition("=")
            field = _VALUE_OPTIONS.get(option)
            if field is None or field in values or (eq and not option.startswith("--")):
                return None  # unknown (--json, --ref, --help …), repeated, or -r=VALUE
            if not eq:
                value = next(rest, "")
            if not value or value.startswith("-"):
                return None  # a missing value: Typer's usage error says it best
            values[field] = value
        elif name is None and token:
            name = token
        else:
            return None  # a second argument (or an empty one): Typer's usage error
    if name is None:
        return None

    def resolve(field: str, default: str) -> str:
        return values.get(field) or environ.get(_ENV[field]) or default

    spool = resolve("spool", "")
    return LeanEnqueue(
        name=name,
        slot=values.get("slot", "auto"),
        quiet=quiet,
        database_url=resolve("database_url", DEFAULT_DATABASE_URL),
        table_prefix=resolve("table_prefix", ""),
        registry=resolve("registry", DEFAULT_REGISTRY),
        spool_dir=Path(spool) if spool else None,
    )


def run(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int | None:
    """Run a plain ``enqueue NAME`` and return its exit code; ``None`` (nothing done) for any
    other command line. Our errors print the same one line as the full CLI."""
    args = parse(argv, os.environ if environ is None else environ)
    if args is None:
        return None
    from migrate_cron.cli.enqueue_output import say
    from migrate_cron.errors import MigrateCronError
    from migrate_cron.producer.enqueue import enqueue_slot

    try:
        result = enqueue_slot(
            args.name,
            slot=args.slot,
            quiet=args.quiet,
            as_json=False,
            database_url=args.database_url,
            table_prefix=args.table_prefix,
            registry=args.registry,
            spool_dir=args.spool_dir,
            direct=True,
        )
        return say(result)
    except MigrateCronError as exc:
        from migrate_cron.cli.error_line import print_error
        from migrate_cron.config import mask_url

        print_error(mask_url(str(exc)))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130  # as Typer: Exit(130)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _quiet_broken_pipes()  # as Typer (Click): exit 1, no traceback at interpreter exit
        return 1


def _quiet_broken_pipes() -> None:
    """Point stdout and stderr at /dev/null: whoever read them is gone, and Python's final
    flush would otherwise print a BrokenPipeError (Click wraps the streams to the same end)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
