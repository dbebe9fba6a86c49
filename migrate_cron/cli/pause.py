"""``migrate-cron pause KIND…`` / ``resume KIND…``: stop and restart a kind for a maintenance
window, across every worker and scheduler (``scheduler pause|resume`` for the scheduler)."""

from __future__ import annotations

from typing import Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, TablePrefix, info, print_json, reflow
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

PAUSE_HELP = reflow(
    """Pause kinds: workers stop claiming them (running jobs finish); the scheduler records
    no slot of a paused job, so `resume` applies its skip / run-once / backfill policy to the
    pause as to a downtime. Jobs enqueued meanwhile (by `enqueue` from cron, by code) wait
    and run on resume. Takes effect within a few seconds; `status` lists pauses.

    Example: migrate-cron pause invoices-export orders-poll"""
)
RESUME_HELP = reflow(
    """Resume paused kinds (see `pause`).

    Example: migrate-cron resume invoices-export"""
)

Kinds = Annotated[list[str], typer.Argument(help="Job kinds (registry names).", metavar="KIND...")]


def register(app: typer.Typer) -> None:
    app.command("pause", help=PAUSE_HELP)(pause)
    app.command("resume", help=RESUME_HELP)(resume)


def pause(
    kinds: Kinds,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """See ``PAUSE_HELP``."""
    change(kinds, True, as_json, database_url, table_prefix)


def resume(
    kinds: Kinds,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """See ``RESUME_HELP``."""
    change(kinds, False, as_json, database_url, table_prefix)


def change(names: list[str], on: bool, as_json: bool, url: str, prefix: str) -> None:
    """Pause or resume ``names`` (kinds, or the scheduler's own name) and say what changed."""
    from migrate_cron.cli.actor import cli_actor
    from migrate_cron.cli.common import open_store
    from migrate_cron.errors import UsageError
    from migrate_cron.store.leases import SCHEDULER_PAUSE

    bad = [
        n for n in names if not n or len(n) > 190 or (n.startswith("@") and n != SCHEDULER_PAUSE)
    ]
    if bad:
        raise UsageError(f"not a job kind: {', '.join(map(repr, bad))}")
    store = open_store(url, prefix)
    try:
        actor = cli_actor()
        changed = (
            store.pause(names, _who(), actor=actor) if on else store.resume(names, actor=actor)
        )
        now = store.paused()
    finally:
        store.dispose()
    shown = ["the scheduler" if n == SCHEDULER_PAUSE else n for n in names]
    if as_json:
        print_json({"paused" if on else "resumed": changed, "paused_now": sorted(now)})
        return
    verb = "paused" if on else "resumed"
    for name, label in zip(names, shown, strict=True):
        if name in changed:
            info(f"{verb} {label}")
        else:
            info(f"{label} was {'already paused' if on else 'not paused'}")


def _who() -> str:
    import getpass
    import socket
    from datetime import UTC, datetime

    return f"{getpass.getuser()}@{socket.gethostname()} {datetime.now(UTC):%Y-%m-%dT%H:%MZ}"
