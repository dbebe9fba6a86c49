"""``migrate-cron scheduler`` (the long-running enqueuer) and ``migrate-cron simulate``.

Which jobs a scheduler owns: the registry's scheduled jobs with ``mode = "scheduler"``; with
``--all``, every scheduled job (lines still firing ``migrate-cron enqueue`` for the same job are
harmless: the slot key keeps one job per slot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, RegistryPath, TablePrefix
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from migrate_cron.clock import Clock
    from migrate_cron.registry import JobSpec, Registry
    from migrate_cron.scheduler.log import SchedulerLog
    from migrate_cron.scheduler.scheduler import RunEvent, ScheduledJob
    from migrate_cron.scheduler.simulate import Downtime, SimulatedRun

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
SIMULATE_HELP = (
    "Print what each job's policy would enqueue and skip over a period with downtime, without "
    "touching the database. Before --from every job is assumed to have run normally; the "
    "scheduler restarts at the end of each --down."
)


def register(app: typer.Typer) -> None:
    app.command("scheduler", help=SCHEDULER_HELP)(scheduler)
    app.command("simulate", help=SIMULATE_HELP)(simulate)


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
    import signal
    import threading

    if action is not None:
        from migrate_cron.cli.pause import change
        from migrate_cron.errors import UsageError
        from migrate_cron.store.leases import SCHEDULER_PAUSE

        if action not in ("pause", "resume"):
            raise UsageError(f"scheduler {action}: use `scheduler pause` or `scheduler resume`")
        change([SCHEDULER_PAUSE], action == "pause", as_json, database_url, table_prefix)
        return

    from migrate_cron.cli.common import open_store
    from migrate_cron.errors import UsageError
    from migrate_cron.logline import route_library_logs
    from migrate_cron.scheduler.leader import Leadership
    from migrate_cron.scheduler.log import SchedulerLog
    from migrate_cron.scheduler.loop import SchedulerLoop
    from migrate_cron.scheduler.scheduler import Scheduler
    from migrate_cron.store.dialects import driver_loggers
    from migrate_cron.store.timeouts import Use

    # An entry's error is that entry's: the others are scheduled, the bad ones said below.
    reg = _registry(registry, partial=True)
    jobs = _scheduled_jobs(reg, [], include_all)
    if not jobs and reg.errors:
        raise next(iter(reg.errors.values()))
    if not jobs:
        raise UsageError(
            f"{registry}: no job for the scheduler: give a scheduled job "
            '`mode = "scheduler"`, or pass --all to schedule every job that has a schedule'
        )
    clock = _clock(now, speed, until, once)
    end = _iso(until, "--until") if until else None
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

    def on_signal(_signum: int, _frame: object) -> None:
        # Not stop.set() here: a signal landing while the main thread holds the Event's lock
        # (entering or leaving stop.wait) would deadlock on it. Set it from another thread.
        threading.Thread(target=stop.set, daemon=True).start()
        # A database call that froze cannot see the stop: leave after a few seconds anyway
        # (the lease row then expires and a standby takes over; slots are keyed, nothing lost).
        timer = threading.Timer(SHUTDOWN_BOUND, _leave_now, args=(log,))
        timer.daemon = True
        timer.start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
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
        _print_events(result.events, {j.name: tz for j, tz in _zones(jobs)}, as_json)
        if result.led:
            info(_once_summary(result.events, scheduler.next_due()))
    elif not once:
        log.event("stop", ticks=result.ticks)


def simulate(
    jobs: Annotated[
        list[str] | None,
        typer.Argument(help="Jobs to simulate (default: the jobs the scheduler owns)."),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(
            "--from", help="Start of the simulated period (default: the first --down, or now)."
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="End of the period (default: an hour after the last --down, or --from + 1 day).",
        ),
    ] = None,
    down: Annotated[
        list[str] | None,
        typer.Option(
            "--down",
            help="FROM..TO: the scheduler is not running then (repeatable).",
        ),
    ] = None,
    tz: Annotated[
        str, typer.Option("--tz", help="Timezone for times given without an offset.")
    ] = "UTC",
    include_all: AllFlag = False,
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
) -> None:
    """See ``SIMULATE_HELP``."""
    from datetime import UTC, datetime, timedelta

    from migrate_cron.crontab.timezone import check_zone
    from migrate_cron.errors import UsageError
    from migrate_cron.scheduler.simulate import simulate as run_simulation

    check_zone(tz)
    selected = _scheduled_jobs(_registry(registry), jobs or [], include_all)
    if not selected:
        raise UsageError(
            f"{registry}: no job to simulate: name jobs, or pass --all for every scheduled job"
        )
    downs = [_downtime(d, tz) for d in down or []]
    if start:
        t0 = _iso(start, "--from", tz)
    elif downs:
        t0 = min(d.start for d in downs)
    else:
        t0 = datetime.now(UTC).replace(second=0, microsecond=0)
    if end:
        t1 = _iso(end, "--to", tz)
    elif downs:
        t1 = max(d.end for d in downs) + timedelta(hours=1)
    else:
        t1 = t0 + timedelta(days=1)
    if t1 < t0:
        raise UsageError("--to is before --from")
    try:
        runs = run_simulation(selected, t0, t1, downs)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    zones = {j.name: z for j, z in _zones(selected)}
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json(
            {
                "from": t0,
                "to": t1,
                "down": [{"from": d.start, "to": d.end} for d in downs],
                "runs": [
                    {
                        "job": r.job,
                        "slot": r.slot,
                        "slot_local": _local(r.slot, zones[r.job]),
                        "action": r.action,
                        "reason": r.reason,
                        "acted_at": r.acted_at,
                    }
                    for r in runs
                ],
                "summary": _summary(runs, [j.name for j in selected]),
            }
        )
        return
    rows = [
        (r.job, _local(r.slot, zones[r.job]), _utc(r.slot), r.action, r.reason, _utc(r.acted_at))
        for r in runs
    ]
    _print_table(("JOB", "SLOT (job time)", "SLOT (UTC)", "ACTION", "WHY", "ACTED AT (UTC)"), rows)
    from migrate_cron.cli.common import info

    for name, counts in _summary(runs, [j.name for j in selected]).items():
        info(
            f"{name}: {counts['enqueue']} enqueued ({counts['late']} late), "
            f"{counts['skip']} skipped"
        )


# ---------------------------------------------------------------------- helpers
def _registry(path: str, *, partial: bool = False) -> Registry:
    from migrate_cron.registry import load_registry

    return load_registry(path, partial=partial)


def _scheduled_jobs(reg: Registry, names: Sequence[str], include_all: bool) -> list[ScheduledJob]:
    from migrate_cron.crontab.schedule import ScheduleError
    from migrate_cron.errors import ConfigError, UsageError
    from migrate_cron.scheduler.scheduler import ScheduledJob, owned_jobs

    if names:
        specs: list[JobSpec] = [reg.get(n) for n in dict.fromkeys(names)]
        unscheduled = [s.name for s in specs if not s.schedule]
        if unscheduled:
            raise UsageError(f"job(s) without a schedule: {', '.join(unscheduled)}")
    else:
        specs = owned_jobs(reg, include_all)
    out = []
    for spec in specs:
        try:
            out.append(ScheduledJob.from_spec(spec))
        except ScheduleError as exc:
            raise ConfigError(f"{reg.path}: job {spec.name!r}: {exc}") from None
    return out


def _zones(jobs: Sequence[ScheduledJob]) -> list[tuple[ScheduledJob, str]]:
    return [(j, str(getattr(j.schedule, "tz", "UTC"))) for j in jobs]


def _clock(now: str | None, speed: float | None, until: str | None, once: bool) -> Clock:
    from migrate_cron.clock import FakeClock, SystemClock
    from migrate_cron.errors import UsageError
    from migrate_cron.scheduler.warp import WarpClock

    if now is None:
        if speed is not None:
            raise UsageError("--speed needs --now (the simulated start)")
        return SystemClock()
    start = _iso(now, "--now")
    if once:
        return FakeClock(start)
    if speed is None or speed == 0:
        if until is None:
            raise UsageError("--now without --once needs --until, or a --speed above 0")
        return FakeClock(start)
    if speed < 0:
        raise UsageError("--speed must be 0 or more")
    return WarpClock(start, speed)


def _iso(text: str, option: str, tz: str = "UTC") -> datetime:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from migrate_cron.errors import UsageError

    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: use an ISO time like 2026-03-29T01:00 or 2026-03-29T01:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=ZoneInfo(tz))
    from datetime import UTC

    return when.astimezone(UTC)


def _downtime(text: str, tz: str) -> Downtime:
    from migrate_cron.errors import UsageError
    from migrate_cron.scheduler.simulate import Downtime

    first, sep, second = text.partition("..")
    if not sep or not first or not second:
        raise UsageError(f"--down {text!r}: use FROM..TO, e.g. 2026-03-29T01:00..2026-03-29T04:00")
    try:
        return Downtime(_iso(first, "--down", tz), _iso(second, "--down", tz))
    except ValueError as exc:
        raise UsageError(f"--down {text!r}: {exc}") from None


#: Seconds a scheduler may take to stop after SIGTERM before it exits regardless.
SHUTDOWN_BOUND = 10.0


def _leave_now(log: SchedulerLog) -> None:
    """The stop asked for, done the only way left: a scheduler keeps nothing in memory that
    the database lacks (slots are keyed, its lease expires within the TTL and a standby takes
    over), so this is a clean stop, exit 0 — a supervisor must not see a failure in it."""
    import os
    import sys

    log.event(
        "exit",
        f"still stopping after {SHUTDOWN_BOUND:g}s (the database does not answer): exiting now; "
        "the lease expires on its own",
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _summary(runs: Sequence[SimulatedRun], names: Sequence[str]) -> dict[str, dict[str, int]]:
    from migrate_cron.scheduler.policy import CATCH_UP, ENQUEUE

    out = {n: {"enqueue": 0, "late": 0, "skip": 0} for n in names}
    for r in runs:
        counts = out[r.job]
        if r.action == ENQUEUE:
            counts["enqueue"] += 1
            counts["late"] += r.reason == CATCH_UP
        else:
            counts["skip"] += 1
    return out


def _print_events(events: Sequence[RunEvent], zones: dict[str, str], as_json: bool) -> None:
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json(
            {
                "events": [
                    {
                        "job": e.job,
                        "slot": e.slot,
                        "slot_local": _local(e.slot, zones[e.job]),
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
            _local(e.slot, zones[e.job]),
            e.action,
            e.reason,
            "new" if e.created else "already recorded",
            "" if e.job_id is None else str(e.job_id),
        )
        for e in events
    ]
    if rows:
        _print_table(("JOB", "SLOT (job time)", "ACTION", "WHY", "RECORD", "JOB ID"), rows)


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
    after = f"; next at {_utc(next_due)} UTC" if next_due is not None else "; no slot ahead"
    return f"{len(events)} {slots} due{what}{after}"


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Plain aligned columns: readable in a terminal, greppable in a pipe, never truncated."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    for row in (header, *rows):
        typer.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _local(t: datetime, tz: str) -> str:
    from zoneinfo import ZoneInfo

    return t.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M %z")


def _utc(t: datetime) -> str:
    from datetime import UTC

    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
