"""``migrate-cron verify | migrations``: is a switch safe, and where each job stands.

The commands parse arguments, call ``migrate_cron.migration`` (``verify``, ``progress``) and
print: the checks or the table (or JSON) on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import (
    DatabaseUrl,
    JsonFlag,
    RegistryPath,
    TablePrefix,
    info,
    reflow,
)
from migrate_cron.cli.migrate import Name
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.migration.check_alive import Liveness


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)
    app.command("migrations")(migrations)


def verify(
    name: Name,
    crontab: Annotated[
        list[Path] | None,
        typer.Option(
            "--crontab",
            help="Crontab files to search for a second line running the same command "
            "(repeatable). Default: the job's own file.",
            show_default=False,
        ),
    ] = None,
    days: Annotated[
        int, typer.Option("--days", min=1, max=366, help="How far ahead to compare slots.")
    ] = 7,
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Check a switch: same slots as cron, no second line running the command, queue runs,
    and (once switched) a scheduler leading in scheduler mode and a worker taking the jobs.

    Exit 1 when a check fails (the failing checks say what to do).
    """
    from migrate_cron.cli.common import print_json
    from migrate_cron.clock import SystemClock
    from migrate_cron.migration.verify import verify_job
    from migrate_cron.registry import load_registry

    reg = load_registry(registry, partial=True)  # the others' errors: a failed check
    spec = reg.get(name)
    report = verify_job(
        reg,
        spec,
        files=crontab,
        days=days,
        now=SystemClock().now(),
        history=lambda since: _history(database_url, table_prefix, name, since),
        live=lambda: _liveness(database_url, table_prefix, name),
    )
    if as_json:
        print_json(report.as_dict())
    else:
        _print_verify(report)
    if not report.ok:
        raise typer.Exit(1)


def migrations(
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Every registry job: its mode, its last run in the queue, and the next step of the plan."""
    from migrate_cron.cli.common import print_json
    from migrate_cron.migration.progress import progress
    from migrate_cron.registry import load_registry

    reg = load_registry(registry)
    rows, db_error = progress(reg, lambda names: _histories(database_url, table_prefix, names))
    if db_error:
        info(f"[yellow]note:[/yellow] no queue numbers: {db_error}")
    if as_json:
        print_json({"jobs": [r.as_dict() for r in rows]})
        return
    _print_progress(rows)


def _history(url: str, prefix: str, name: str, since):  # type: ignore[no-untyped-def]
    from migrate_cron.cli.common import open_store

    store = open_store(url, prefix)
    try:
        return store.kind_history([name], since)[name]
    finally:
        store.dispose()


def _liveness(url: str, prefix: str, name: str) -> Liveness:
    from migrate_cron.cli.common import open_store
    from migrate_cron.migration.check_alive import read_liveness

    store = open_store(url, prefix)
    try:
        return read_liveness(store, name)
    finally:
        store.dispose()


def _histories(url: str, prefix: str, names):  # type: ignore[no-untyped-def]
    from migrate_cron.cli.common import open_store

    store = open_store(url, prefix)
    try:
        return store.kind_history(list(names))
    finally:
        store.dispose()


def _console() -> Console:
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=160)


def _print_verify(report) -> None:  # type: ignore[no-untyped-def]
    from rich.markup import escape

    console = _console()
    verdict = "[green]ok[/green]" if report.ok else "[red]a check failed[/red]"
    console.print(f"[bold]{escape(report.name)}[/bold] (mode {report.mode}): {verdict}")
    for check in report.checks:
        mark = {"ok": "[green]ok[/green]     ", "fail": "[red]FAIL[/red]   "}.get(
            check.status, f"[yellow]{check.status:7}[/yellow]"
        )
        console.print(f"  {mark} {escape(check.title)}: {escape(check.summary)}")
        for line in check.details:
            console.print(f"           {escape(line)}")


def _print_progress(rows) -> None:  # type: ignore[no-untyped-def]
    from rich.markup import escape
    from rich.table import Table

    from migrate_cron.cli.render.fit import FitOrStack

    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
    for col in ("job", "mode", "line", "last success", "runs since switch"):
        table.add_column(col, no_wrap=True)
    table.add_column("next step", overflow="fold")
    for r in rows:
        table.add_row(
            escape(r.name),
            r.mode,
            escape(r.where),
            r.last_run_text,
            r.runs_text,
            escape(r.next_step),
        )
    _console().print(FitOrStack(table))


for _command in (verify, migrations):
    _command.__doc__ = reflow(_command.__doc__)
