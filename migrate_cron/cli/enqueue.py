"""``migrate-cron enqueue NAME``: the enqueue-only producer a crontab line is rewritten to.

Every host with the crontab fires it; the slot key (job_name, scheduled_for) makes the database
keep one job per slot. It runs every minute on every host, so imports stay inside the function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, RegistryPath, TablePrefix
from migrate_cron.config import DEFAULT_DATABASE_URL, DEFAULT_REGISTRY

if TYPE_CHECKING:
    from datetime import datetime


HELP = (
    "Enqueue the job for one slot, once: a second call for the same slot (another host, a "
    "retry) changes nothing. The enqueue-only producer a crontab line is rewritten to.\n\n"
    "Prints `enqueued` or `already enqueued` (or nothing with --quiet); exits 0 both ways, 1 if "
    "the job is unknown or the database cannot be reached (cron's mail says why)."
)


def register(app: typer.Typer) -> None:
    app.command("enqueue", help=HELP)(enqueue)


def enqueue(
    name: Annotated[str, typer.Argument(help="The job's name in the registry.")],
    slot: Annotated[
        str,
        typer.Option(
            "--slot",
            help=(
                "The cron slot this run is for: `auto` = the job's latest slot at or before now "
                "(in its timezone; a job without schedule: the current minute), or an ISO time "
                "(without offset: read in the job's timezone)."
            ),
        ),
    ] = "auto",
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print nothing on success (cron mails any output)."),
    ] = False,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
    registry: RegistryPath = DEFAULT_REGISTRY,
) -> None:
    """See ``HELP``."""
    from datetime import UTC, datetime

    from migrate_cron.registry import load_registry
    from migrate_cron.scheduler.slot import resolve_slot

    spec = load_registry(registry).get(name)
    when = resolve_slot(spec, slot, datetime.now(UTC))

    from migrate_cron.cli.common import open_store

    store = open_store(database_url, table_prefix)
    try:
        result = store.enqueue_run(spec.name, when, max_attempts=spec.max_attempts)
    finally:
        store.dispose()
    if result.created:
        outcome = "enqueued"
    elif result.outcome == "skipped":
        outcome = "already recorded as skipped"
    else:
        outcome = "already enqueued"
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json(
            {
                "job": spec.name,
                "slot": when.astimezone(UTC),
                "slot_local": _local(when, spec.timezone),
                "outcome": outcome,
                "created": result.created,
                "job_id": result.job_id,
            }
        )
    elif not quiet:
        typer.echo(outcome)


def _local(t: datetime, tz: str) -> str:
    from zoneinfo import ZoneInfo

    return t.astimezone(ZoneInfo(tz)).isoformat()
