"""``migrate-cron cleanup``: delete old finished jobs and old slot rows in short chunks, and
the rows of workers and operators' actions by the same retentions.

Each chunk is its own transaction of at most ``--batch`` rows, so workers keep claiming while
it runs. The newest ``scheduled_runs`` row of every job is always kept: the run-once and
backfill policies start from it. Run it daily, from cron or as a registry job of its own
(see docs/operating.md).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, TablePrefix
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL


def register(app: typer.Typer) -> None:
    app.command("cleanup")(cleanup)


def cleanup(
    done_older_than: Annotated[
        str,
        typer.Option(
            "--done-older-than",
            help="Delete done jobs (and old slot rows, and the rows of workers not seen since) "
            "older than this; 'never' keeps them.",
        ),
    ] = "7d",
    failed_older_than: Annotated[
        str,
        typer.Option(
            "--failed-older-than",
            help="Delete failed and cancelled jobs (and the operators' action log) older than "
            "this; 'never' keeps them.",
        ),
    ] = "90d",
    batch: Annotated[
        int, typer.Option("--batch", min=1, max=100_000, help="Rows per delete transaction.")
    ] = 1000,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Delete old finished jobs in short chunks.

    Done jobs older than --done-older-than, failed and cancelled jobs older
    than --failed-older-than, and scheduled_runs rows older than
    --done-older-than except the newest one per job (the missed-run policies
    need it). Each chunk is its own short transaction.

    The Workers page's rows of workers not seen for --done-older-than, and
    the action log's rows (who retried, cancelled, paused…) older than
    --failed-older-than, go too: an incident's actions are kept as long as
    its failed jobs.
    """
    from migrate_cron.cli.common import open_store, print_json
    from migrate_cron.store.timeouts import Use

    done_age = _age(done_older_than, "--done-older-than")
    failed_age = _age(failed_older_than, "--failed-older-than")
    progress = sys.stderr.isatty() and sys.stdout.isatty() and not as_json

    def on_progress(what: str, n: int) -> None:
        if progress:
            sys.stderr.write(f"\r\x1b[2Kdeleting {what}: {n}")
            sys.stderr.flush()

    store = open_store(database_url, table_prefix, Use.LONG)
    try:
        result = store.cleanup(
            done_older_than=done_age,
            failed_older_than=failed_age,
            batch=batch,
            on_progress=on_progress,
        )
    finally:
        store.dispose()
        if progress:
            sys.stderr.write("\r\x1b[2K")
    if as_json:
        print_json(
            {
                "done": result.done,
                "failed": result.failed,
                "cancelled": result.cancelled,
                "scheduled_runs": result.scheduled_runs,
                "workers": result.workers,
                "actions": result.actions,
            }
        )
        return
    sys.stdout.write(
        f"removed {result.done} done, {result.failed} failed and {result.cancelled} cancelled "
        f"job(s), and {result.scheduled_runs} old scheduled_runs row(s)\n"
    )
    if result.workers or result.actions:
        sys.stdout.write(
            f"removed {result.workers} worker row(s) and {result.actions} action log row(s)\n"
        )


def _age(text: str, option: str) -> float | None:
    from migrate_cron.errors import UsageError
    from migrate_cron.ops.cleanup import retention_age

    try:
        return retention_age(text, option)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
