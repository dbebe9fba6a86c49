"""The ``migrate-cron`` entry point: builds the Typer app and turns our errors into exit codes."""

from __future__ import annotations

import os
import sys

import typer

from migrate_cron import __version__
from migrate_cron.config import mask_url
from migrate_cron.errors import MigrateCronError

app = typer.Typer(
    name="migrate-cron",
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


def _register() -> None:
    """Each command module adds its commands; imports inside them stay lazy."""
    # One line per command module, each with ``register(app)``.
    __import__("migrate_cron.cli.status", fromlist=["register"]).register(app)  # +jobs, cleanup…
    __import__("migrate_cron.cli.generate", fromlist=["register"]).register(app)
    __import__("migrate_cron.cli.worker", fromlist=["register"]).register(app)
    __import__("migrate_cron.cli.db", fromlist=["register"]).register(app)
    __import__("migrate_cron.cli.enqueue", fromlist=["register"]).register(app)
    __import__("migrate_cron.cli.scheduler", fromlist=["register"]).register(app)  # +simulate
    __import__("migrate_cron.cli.analyze", fromlist=["register"]).register(app)  # +explain
    __import__("migrate_cron.cli.migrate", fromlist=["register"]).register(app)  # +plan, rollback…


_register()


def main() -> None:
    try:
        app()
    except MigrateCronError as exc:
        if os.environ.get("MIGRATE_CRON_DEBUG"):
            raise
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True, soft_wrap=True).print(
            f"[red]error:[/red] {escape(mask_url(str(exc)))}", highlight=False
        )
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
