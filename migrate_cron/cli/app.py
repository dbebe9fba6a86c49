"""The full ``migrate-cron`` CLI: builds the Typer app and turns our errors into exit codes.

``cli.main`` (the console entry point) imports this module only when the command line is not
the plain ``enqueue NAME`` cron fires every minute (``cli.lean`` serves that one without Typer).
"""

from __future__ import annotations

import os
import sys

import typer

from migrate_cron import __version__
from migrate_cron.cli.error_line import print_error
from migrate_cron.cli.help_text import JourneyGroup, plain_types
from migrate_cron.config import mask_url
from migrate_cron.errors import MigrateCronError

app = typer.Typer(
    name="migrate-cron",
    cls=JourneyGroup,
    help=(
        "Move a legacy crontab, one line at a time, onto a reliable job queue in the "
        "database you already run (SQLite, PostgreSQL, MySQL/MariaDB)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"migrate-cron {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(
        False, "--debug", envvar="MIGRATE_CRON_DEBUG", help="Show tracebacks for errors."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    if debug:
        os.environ["MIGRATE_CRON_DEBUG"] = "1"


#: Every command module, in the order of the journey (analyze → plan → generate → migrate →
#: run → operate). Each module's ``register(app)`` adds only its own commands; the heavy
#: imports inside them stay lazy, so every command starts fast (the plain ``enqueue NAME``
#: cron fires does not even come here: ``cli.lean`` serves it without Typer).
COMMAND_MODULES = (
    "analyze",  # analyze, explain
    "plan",
    "generate",  # generate registry, generate migration
    "registry",  # registry check
    "db",
    "migrate",  # migrate, rollback
    "verify",  # verify, migrations
    "enqueue",
    "once",
    "spool",  # spool list, spool flush
    "worker",
    "scheduler",
    "simulate",
    "status",
    "jobs",
    "jobs_run",  # jobs run
    "pause",  # pause, resume
    "cleanup",
    "metrics",
    "web",
)


def _register() -> None:
    import importlib

    from migrate_cron.cli.help_text import add_help

    for name in COMMAND_MODULES:
        importlib.import_module(f"migrate_cron.cli.{name}").register(app)
    add_help(app)


_register()


def main() -> None:
    """Run the Typer app on ``sys.argv``; our errors become one line and their exit code."""
    try:
        # Not standalone: Typer would print a usage error as a boxed panel; ours are one line.
        command = typer.main.get_command(app)
        plain_types(command)
        code = command.main(standalone_mode=False)
    except MigrateCronError as exc:
        if os.environ.get("MIGRATE_CRON_DEBUG"):
            raise
        print_error(mask_url(str(exc)))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help was printed: that is all
            sys.exit(getattr(exc, "exit_code", 2))
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        print_error(f"{exc.format_message()}{hint}")  # type: ignore[attr-defined]
        sys.exit(getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)


def _is_usage_error(exc: BaseException) -> bool:
    """A command-line error raised by Typer's click (``ClickException``: unknown option or
    command, bad value) or an abort at a prompt. Matched by name: Typer ships its own copy of
    click, so there is no one public class to import."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"ClickException", "Abort"}) and hasattr(exc, "format_message")
