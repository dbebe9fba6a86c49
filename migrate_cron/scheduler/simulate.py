"""What each job's policy would enqueue and skip, without a database.

``simulate`` runs the real ``Scheduler`` on a ``FakeClock`` against an in-memory ledger: the
scheduler is up from ``start`` to ``end`` except during the given downtimes, restarting after
each one (which is when the missed-run policies act). Before ``start`` every job is assumed to
have run normally, i.e. its latest slot at or before ``start`` is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from migrate_cron.clock import FakeClock
from migrate_cron.scheduler.memory_runs import MemoryLedger
from migrate_cron.scheduler.scheduler import RunEvent, ScheduledJob, Scheduler


@dataclass(frozen=True, slots=True)
class Downtime:
    """The scheduler is not running from ``start`` to ``end`` (it restarts at ``end``)."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError(f"downtime ends before it starts: {self.start} .. {self.end}")


@dataclass(frozen=True, slots=True)
class SimulatedRun:
    """One slot: what the scheduler did with it and when (``acted_at``)."""

    job: str
    slot: datetime
    action: str
    reason: str
    acted_at: datetime


def uptime(
    start: datetime, end: datetime, down: Sequence[Downtime]
) -> list[tuple[datetime, datetime]]:
    """The intervals in ``[start, end]`` when the scheduler runs."""
    if end < start:
        raise ValueError("the simulation ends before it starts")
    spans: list[tuple[datetime, datetime]] = []
    cursor = start
    for d in sorted(down, key=lambda d: d.start):
        if d.end <= cursor or d.start >= end:
            continue
        if d.start > cursor:
            spans.append((cursor, d.start))
        cursor = max(cursor, d.end)
    if cursor <= end:
        spans.append((cursor, end))
    return spans


def simulate(
    jobs: Sequence[ScheduledJob],
    start: datetime,
    end: datetime,
    down: Sequence[Downtime] = (),
) -> list[SimulatedRun]:
    """Every slot of ``jobs`` in ``(start, end]`` with its action, in the order acted on."""
    ledger = MemoryLedger()
    for job in jobs:
        latest = _latest(job, start)
        if latest is not None:
            ledger.seed(job.name, latest)
    clock = FakeClock(start)
    scheduler = Scheduler(jobs, ledger, clock)
    out: list[SimulatedRun] = []
    for up_start, up_end in uptime(start, end, down):
        clock.set(up_start)
        scheduler.load()  # a (re)start: positions come from the ledger
        _record(out, scheduler.tick(), up_start)
        while (due := scheduler.next_due()) is not None and due <= up_end:
            clock.set(due)
            _record(out, scheduler.tick(), due)
    return out


def _latest(job: ScheduledJob, t: datetime) -> datetime | None:
    latest = getattr(job.schedule, "latest_at_or_before", None)
    return latest(t) if latest is not None else None


def _record(out: list[SimulatedRun], events: Sequence[RunEvent], at: datetime) -> None:
    out.extend(SimulatedRun(e.job, e.slot, e.action, e.reason, at) for e in events)


def period(
    start: datetime | None, end: datetime | None, downs: Sequence[Downtime], now: datetime
) -> tuple[datetime, datetime]:
    """The simulated period: from ``start``, else the first downtime, else ``now`` to the
    minute; to ``end``, else an hour after the last downtime, else a day later."""
    from datetime import timedelta

    if start is not None:
        t0 = start
    elif downs:
        t0 = min(d.start for d in downs)
    else:
        t0 = now.replace(second=0, microsecond=0)
    if end is not None:
        t1 = end
    elif downs:
        t1 = max(d.end for d in downs) + timedelta(hours=1)
    else:
        t1 = t0 + timedelta(days=1)
    return t0, t1


def summary(runs: Sequence[SimulatedRun], names: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per job: slots enqueued (of them late, caught up after a downtime) and skipped."""
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
