"""``migrate-cron enqueue NAME``: the enqueue-only producer a crontab line is rewritten to.

Every host with the crontab fires it; the slot key (job_name, scheduled_for) makes the database
keep one job per slot. It runs every minute on every host, so imports stay inside the function.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, RegistryPath, TablePrefix
from migrate_cron.config import DEFAULT_DATABASE_URL, DEFAULT_REGISTRY

if TYPE_CHECKING:
    from datetime import datetime

    from migrate_cron.spool import SpooledSlot
    from migrate_cron.store import Store

SpoolDir = Annotated[
    Path | None,
    typer.Option(
        "--spool",
        envvar="MIGRATE_CRON_SPOOL",
        help="Where slots wait while the database is away (default: /var/spool/migrate-cron "
        "when writable, else ~/.local/state/migrate-cron/spool).",
        show_default=False,
    ),
]


HELP = (
    "Enqueue the job for one slot, once: a second call for the same slot (another host, a "
    "retry) changes nothing. The enqueue-only producer a crontab line is rewritten to.\n\n"
    "Prints `enqueued` or `already enqueued` (or nothing with --quiet); exits 0 both ways, 2 if "
    "the job is unknown. When the database cannot be reached (refused, timed out, stalled: "
    "25 s at most), the slot is written to the local spool, one line says so, and the exit "
    "code is 75 (EX_TEMPFAIL) so cron's mail tells you; the next enqueue that reaches the "
    "database replays the spool first (`spool list`, `spool flush` by hand).\n\n"
    "Examples:\n\n"
    "  migrate-cron enqueue invoices-export\n\n"
    "  migrate-cron enqueue invoices-export --slot 2026-03-01T02:30 --json"
)

#: ``enqueue`` gives up on the database after this long, spools the slot and exits 75, whatever
#: the database does (a stalled connection cannot be bounded by socket timeouts alone).
DEADLINE_SECONDS = 25.0
EX_TEMPFAIL = 75


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
    spool_dir: SpoolDir = None,
) -> None:
    """See ``HELP``."""
    from datetime import UTC, datetime

    from migrate_cron.cli.common import open_store, settings
    from migrate_cron.errors import DatabaseUnavailable
    from migrate_cron.registry import load_registry
    from migrate_cron.scheduler.slot import resolve_slot
    from migrate_cron.spool import Spool, default_dir, target_of

    spec = load_registry(registry).get(name)
    when = resolve_slot(spec, slot, datetime.now(UTC))
    config = settings(database_url, table_prefix)
    spool = Spool(spool_dir or default_dir())
    target = target_of(config.safe_url, config.table_prefix)

    def to_spool(reason: str) -> None:
        path = spool.put(spec.name, when, spec.max_attempts, target, reason)
        sys.stderr.write(
            f"migrate-cron enqueue: the database is unavailable ({reason}); "
            f"slot {when.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ} of {spec.name} spooled to {path}\n"
        )
        sys.stderr.flush()

    watchdog = _Watchdog(DEADLINE_SECONDS, lambda: to_spool(f"no answer in {DEADLINE_SECONDS:g}s"))
    store = open_store(database_url, table_prefix)
    try:
        replayed = sum(1 for _ in spool.flush(target, lambda e: _replay(store, e)))
        result = store.enqueue_run(
            spec.name,
            when,
            max_attempts=spec.max_attempts,
            skip_if_running=spec.overlap == "skip",
        )
    except DatabaseUnavailable as exc:
        if watchdog.cancel():
            to_spool(str(exc))
        if os.environ.get("MIGRATE_CRON_DEBUG"):
            raise  # --debug: the traceback too (the slot is spooled all the same)
        raise typer.Exit(EX_TEMPFAIL) from None
    finally:
        watchdog.cancel()
        store.dispose()
    if replayed and not quiet and not as_json:
        sys.stderr.write(f"replayed {replayed} spooled slot(s) first\n")
    if result.created and result.outcome == "skipped":
        outcome = "skipped"  # overlap = "skip" and a run of the job is still running
    elif result.created:
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
                "replayed": replayed,
            }
        )
    elif not quiet:
        why = " (overlap = skip: the previous run is still running)" if outcome == "skipped" else ""
        typer.echo(outcome + why)


def _replay(store: Store, entry: SpooledSlot) -> None:
    store.enqueue_run(entry.job, entry.slot, max_attempts=entry.max_attempts)


class _Watchdog:
    """After ``seconds``, runs ``on_expiry`` once and ends the process with 75 — unless
    cancelled first. ``cancel`` returns True if it won the race (expiry did not start)."""

    def __init__(self, seconds: float, on_expiry: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._done = False
        self._on_expiry = on_expiry
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        try:
            self._on_expiry()
        finally:
            os._exit(EX_TEMPFAIL)

    def cancel(self) -> bool:
        with self._lock:
            won = not self._done
            self._done = True
        self._timer.cancel()
        return won


def _local(t: datetime, tz: str) -> str:
    from zoneinfo import ZoneInfo

    return t.astimezone(ZoneInfo(tz)).isoformat()
