"""``migrate-cron scheduler``: the long-running enqueuer (``scheduler.loop`` runs it).

Which jobs a scheduler owns: the registry's scheduled jobs with ``mode = "scheduler"``; with
``--all``, every scheduled job (lines still firing ``migrate-cron enqueue`` for the same job are
harmless: the slot key keeps one job per slot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, RegistryPath, TablePrefix
from migrate_cron.cli.times import job_zones, local_time, parse_time, print_table, utc_time
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from migrate_cron.scheduler.scheduler import RunEvent

TESTING = "Testing and operations"

AllFlag = Annotated[
    bool,
    typer.Option(
        "--all",
        help='Every scheduled job, not only those with mode = "scheduler".',
    ),
]


SCHEDULER_HELP = (
    "Enqueue every owned job's slots as they fall due; nothing else (workers run them). Owned: "
    'scheduled jobs with mode = "scheduler", or with --all every scheduled job.\n\n'
    "Several schedulers may run: one holds the lease, the others stand by and take over when "
    "it stops renewing. Slots missed while no scheduler ran (or during a stall: paused VM, clock "
    "jump) follow each job's policy: skip, run-once or backfill (see `migrate-cron simulate`). "
    "SIGTERM finishes the current tick, gives up the lease and exits 0."
)


def register(app: typer.Typer) -> None:
    app.command("scheduler", help=SCHEDULER_HELP)(scheduler)


def scheduler(
    action: Annotated[
        str | None,
        typer.Argument(
            help="pause | resume: stop recording slots for a maintenance window, or go on "
            "(missed slots then follow each job's policy). Without it: run the scheduler.",
            show_default=False,
            metavar="[pause|resume]",
        ),
    ] = None,
    lease_ttl: Annotated[
        float,
        typer.Option(
            "--lease-ttl",
            help="Seconds a leader's lease lasts; a standby takes over within about this long.",
        ),
    ] = 15.0,
    once: Annotated[
        bool,
        typer.Option("--once", help="One tick, then exit (when cron stays the clock)."),
    ] = False,
    include_all: AllFlag = False,
    json_logs: Annotated[
        bool, typer.Option("--json-logs", help="One JSON object per log line on stderr.")
    ] = False,
    as_json: JsonFlag = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="With --once: print nothing unless something went wrong."
        ),
    ] = False,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            help="Pretend the clock starts at this ISO time (UTC unless it has an offset).",
            rich_help_panel=TESTING,
        ),
    ] = None,
    speed: Annotated[
        float | None,
        typer.Option(
            "--speed",
            help="With --now: simulated seconds per real second (0 = jump from slot to slot).",
            rich_help_panel=TESTING,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until", help="Exit once the clock passes this ISO time.", rich_help_panel=TESTING
        ),
    ] = None,
    no_lease: Annotated[
        bool,
        typer.Option(
            "--no-lease",
            help="Act without the lease (split-brain drill: the slot key alone dedupes).",
            hidden=True,
        ),
    ] = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
    registry: RegistryPath = DEFAULT_REGISTRY,
) -> None:
    """See ``SCHEDULER_HELP``."""
    import threading

    if action is not None:
        from migrate_cron.cli.pause import change
        from migrate_cron.errors import UsageError
        from migrate_cron.store.leases import SCHEDULER_PAUSE
        from migrate_cron.vocabulary import Action

        if action not in (Action.PAUSE, Action.RESUME):
            raise UsageError(f"scheduler {action}: use `scheduler pause` or `scheduler resume`")
        change([SCHEDULER_PAUSE], action == Action.PAUSE, as_json, database_url, table_prefix)
        return

    from migrate_cron.cli.common import open_store
    from migrate_cron.errors import UsageError
    from migrate_cron.logline import route_library_logs
    from migrate_cron.registry import load_registry
    from migrate_cron.scheduler.leader import Leadership
    from migrate_cron.scheduler.log import SchedulerLog
    from migrate_cron.scheduler.loop import SchedulerLoop
    from migrate_cron.scheduler.scheduler import Scheduler, scheduled_jobs
    from migrate_cron.scheduler.shutdown import stop_on_signals
    from migrate_cron.scheduler.warp import run_clock
    from migrate_cron.store.dialects import driver_loggers
    from migrate_cron.store.timeouts import Use

    # An entry's error is that entry's: the others are scheduled, the bad ones said below.
    reg = load_registry(registry, partial=True)
    jobs = scheduled_jobs(reg, [], include_all)
    if not jobs and reg.errors:
        raise next(iter(reg.errors.values()))
    if not jobs:
        raise UsageError(
            f"{registry}: no job for the scheduler: give a scheduled job "
            '`mode = "scheduler"`, or pass --all to schedule every job that has a schedule'
        )
    clock = run_clock(parse_time(now, "--now") if now else None, speed, until is not None, once)
    end = parse_time(until, "--until") if until else None
    log = SchedulerLog(json_lines=json_logs, quiet=once)
    route_library_logs(log.event, driver_loggers())
    store = open_store(database_url, table_prefix, Use.LOOP)
    try:
        # Fail fast, like the worker: a wrong URL, wrong credentials or missing tables at start
        # are a configuration error (exit 1), not an outage to wait out.
        store.last_run(jobs[0].name)
    except Exception:
        store.dispose()
        raise
    leadership = None if no_lease else Leadership(store, ttl=lease_ttl)
    stop = threading.Event()
    stop_on_signals(stop, log)
    scheduler = Scheduler(jobs, store, clock)
    loop = SchedulerLoop(
        scheduler,
        leadership,
        clock,
        stop=stop,
        once=once,
        until=end,
        keep_events=once,
        log=log,
        freeze_gc=not once,
        pauses=store.paused,
    )
    for name, error in reg.errors.items():
        log.event("registry-error", f"job {name!r} is left out: {error}")
    if not once:
        log.event("start", jobs=len(jobs), database=store.url_safe)
    try:
        result = loop.run()
    finally:
        store.dispose()
    if once and not quiet:
        from migrate_cron.cli.common import info

        if not result.led:
            info("another scheduler holds the lease: nothing done")
        _print_events(result.events, {j.name: tz for j, tz in job_zones(jobs)}, as_json)
        if result.led:
            info(_once_summary(result.events, scheduler.next_due()))
    elif not once:
        log.event("stop", ticks=result.ticks)


def _print_events(events: Sequence[RunEvent], zones: dict[str, str], as_json: bool) -> None:
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json(
            {
                "events": [
                    {
                        "job": e.job,
                        "slot": e.slot,
                        "slot_local": local_time(e.slot, zones[e.job]),
                        "action": e.action,
                        "reason": e.reason,
                        "created": e.created,
                        "job_id": e.job_id,
                    }
                    for e in events
                ]
            }
        )
        return
    rows = [
        (
            e.job,
            local_time(e.slot, zones[e.job]),
            e.action,
            e.reason,
            "new" if e.created else "already recorded",
            "" if e.job_id is None else str(e.job_id),
        )
        for e in events
    ]
    if rows:
        print_table(("JOB", "SLOT (job time)", "ACTION", "WHY", "RECORD", "JOB ID"), rows)


def _once_summary(events: Sequence[RunEvent], next_due: datetime | None) -> str:
    """One line after ``--once``, also when nothing was due (silence read as "broken")."""
    from collections import Counter

    from migrate_cron.scheduler.policy import ENQUEUE, RECORD_SKIPPED
    from migrate_cron.vocabulary import SlotOutcome

    counts = Counter(e.action for e in events)
    done = {ENQUEUE: SlotOutcome.ENQUEUED, RECORD_SKIPPED: SlotOutcome.SKIPPED}
    parts = [f"{n} {done.get(a, a)}" for a, n in sorted(counts.items())]
    what = f" ({', '.join(parts)})" if parts else ""
    slots = "slot" if len(events) == 1 else "slots"
    after = f"; next at {utc_time(next_due)} UTC" if next_due is not None else "; no slot ahead"
    return f"{len(events)} {slots} due{what}{after}"
