"""The scheduler's core: a heap of each job's next due slot, and one ``tick`` that writes
what is due.

No fixed polling: ``next_due()`` tells the loop when to wake up. A tick takes every job whose
next slot is at or before now, asks its policy about all slots since the job's last recorded
one (so a stall of any length — paused VM, long GC, clock jump — is handled by the same rule as
a restart) and writes the decisions through ``Runs`` (the Store in production, an in-memory
ledger in ``simulate``). Writes are insert-if-absent on (job_name, scheduled_for): a tick that
is repeated, or run by two schedulers at once, enqueues nothing twice.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from migrate_cron.clock import Clock
from migrate_cron.scheduler.policy import (
    CATCH_UP,
    ENQUEUE,
    ON_TIME,
    RECORD_SKIPPED,
    Decision,
    MissedRunPolicy,
    SlotSource,
)
from migrate_cron.vocabulary import Mode, Overlap, Policy, SlotOutcome, Tally

if TYPE_CHECKING:
    from migrate_cron.registry import JobSpec, Registry
    from migrate_cron.store.models import RunResult


#: Enqueued slots written per transaction.
WRITE_BATCH = 200


class Runs(Protocol):
    """Where slots are recorded: ``Store`` implements it, so does ``ledger.MemoryLedger``."""

    def last_runs(self, job_names: Sequence[str] | None = None) -> dict[str, datetime]: ...

    def enqueue_runs(
        self,
        requests: Sequence[tuple[str, datetime, int]],
        *,
        skip_running: Collection[str] = (),
        hold_running: Collection[str] = (),
        late: Collection[tuple[str, datetime]] = (),
    ) -> list[RunResult]:
        """Many (job_name, slot, max_attempts) at once; results in request order. A slot of a
        job in ``skip_running`` is recorded as skipped while a run of it is running (one in
        ``hold_running`` waits for it); either counts a start held back. A ``late`` slot
        (job_name, slot), enqueued, counts a missed slot run late."""
        ...

    def record_skipped(
        self, job_name: str, slots: Sequence[datetime], *, tally: Tally | None = None
    ) -> list[datetime]:
        """Record slots as skipped (insert-if-absent); returns the ones newly recorded,
        counted as ``tally`` when given."""
        ...


@dataclass(frozen=True)
class ScheduledJob:
    """A registry job as the scheduler sees it: its schedule and its rule for missed slots."""

    name: str
    schedule: SlotSource
    rule: MissedRunPolicy = field(default_factory=MissedRunPolicy)
    max_attempts: int = 5
    #: SKIP: a slot due while a run still runs is recorded as skipped (``flock -n``).
    overlap: Overlap = Overlap.WAIT
    #: The registry sets ``overlap`` (one run at a time): a slot due while one runs is held
    #: back (skipped, or waiting), and counted. Unset, runs may overlap: nothing is held.
    one_at_a_time: bool = False

    @classmethod
    def from_spec(cls, spec: JobSpec) -> ScheduledJob:
        from migrate_cron.crontab.schedule import Schedule

        if not spec.schedule:
            raise ValueError(f"job {spec.name!r} has no schedule")
        return cls(
            name=spec.name,
            schedule=Schedule.parse(spec.schedule, spec.timezone),
            rule=MissedRunPolicy(Policy(spec.policy), spec.max_backfill, spec.misfire_grace),
            max_attempts=spec.max_attempts,
            overlap=Overlap(spec.overlap or Overlap.WAIT),
            one_at_a_time=spec.overlap is not None,
        )


@dataclass(frozen=True, slots=True)
class RunEvent:
    """What a tick did with one slot. ``created`` is False when the slot was already
    recorded (by another scheduler, an ``enqueue`` call, or an earlier tick)."""

    job: str
    slot: datetime
    action: str
    reason: str
    created: bool
    job_id: int | None = None


def owned_jobs(specs: Iterable[JobSpec], include_all: bool = False) -> list[JobSpec]:
    """Which registry jobs a scheduler fires: scheduled jobs in mode ``scheduler``, or every
    scheduled job with ``include_all`` (then ``enqueue``/``cron`` lines firing the same job are
    harmless: the slot key dedupes them)."""
    return [s for s in specs if s.schedule and (include_all or s.mode == Mode.SCHEDULER)]


def scheduled_jobs(reg: Registry, names: Sequence[str], include_all: bool) -> list[ScheduledJob]:
    """The jobs ``names`` (each must have a schedule), or with none named the ones a
    scheduler owns, ready to schedule: an entry whose schedule does not parse is an error."""
    from migrate_cron.crontab.schedule import ScheduleError
    from migrate_cron.errors import ConfigError, UsageError

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


class Scheduler:
    """Heap-driven tick logic; time comes from ``clock``, records go to ``runs``."""

    def __init__(self, jobs: Sequence[ScheduledJob], runs: Runs, clock: Clock) -> None:
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise ValueError("job names must be unique")
        self.jobs = {j.name: j for j in jobs}
        self.runs = runs
        self.clock = clock
        self._last: dict[str, datetime] = {}
        self._first_seen: dict[str, datetime] = {}
        # (due as a POSIX timestamp, tie-breaker, name, due): floats compare much faster than
        # aware datetimes, which matters when thousands of jobs share a tick.
        self._heap: list[tuple[float, int, str, datetime]] = []
        self._seq = itertools.count()
        self.loaded = False
        #: Jobs paused (``migrate-cron pause``): their due slots wait unrecorded; on resume
        #: the database's last slot and the job's policy decide, as after a downtime.
        self.paused: frozenset[str] = frozenset()
        self._held: set[str] = set()

    def set_paused(self, names: frozenset[str]) -> None:
        """Pause and resume jobs; a resumed job is reloaded, so its missed slots get its
        skip / run-once / backfill policy."""
        if self._held - names:
            self.loaded = False
        self.paused = names

    # ------------------------------------------------------------------ state
    def load(self) -> None:
        """(Re)read every job's last recorded slot and rebuild the heap.

        Called at start, after winning leadership and after a database outage: the database,
        not this process's memory, says where each job stands. A job never recorded starts at
        the moment this process first saw it, minus its grace window (nothing is missed, a slot
        that is still on time still fires).
        """
        now = self.clock.now()
        recorded = self.runs.last_runs(list(self.jobs))
        self._heap = []
        self._held = set()
        memo: dict[tuple[Any, datetime], datetime] = {}
        for name, job in self.jobs.items():
            first = self._first_seen.setdefault(
                name, now - timedelta(seconds=job.rule.misfire_grace)
            )
            last = recorded.get(name, first)
            self._last[name] = last
            self._push(job, self._next_after(job, last, memo))
        heapq.heapify(self._heap)
        self.loaded = True

    def last_slot(self, name: str) -> datetime | None:
        return self._last.get(name)

    def next_due(self) -> datetime | None:
        """When the next slot of any job falls due (the loop sleeps until then)."""
        return self._heap[0][3] if self._heap else None

    # ------------------------------------------------------------------ tick
    def tick(self, keep_going: Callable[[], bool] | None = None) -> list[RunEvent]:
        """Write every due slot; returns what was done, oldest slot first. ``keep_going`` is
        asked before each write batch (the loop renews the lease there and stops when
        leadership is lost)."""
        if not self.loaded:
            self.load()
        try:
            return self._tick(self.clock.now(), keep_going)
        except BaseException:
            self.loaded = False  # a write failed half-way: the database knows where we are
            raise

    def _tick(self, now: datetime, keep_going: Callable[[], bool] | None) -> list[RunEvent]:
        # Plan every due job first (pure, fast), then write in batches.
        plans: dict[tuple[Any, ...], tuple[list[Decision], datetime]] = {}
        due_jobs: list[tuple[ScheduledJob, list[Decision]]] = []
        now_ts = now.timestamp()
        while self._heap and self._heap[0][0] <= now_ts:
            _, _, name, due = heapq.heappop(self._heap)
            if name in self.paused:
                self._held.add(name)  # back in the heap when resumed (a reload)
                continue
            job = self.jobs[name]
            key = (job.schedule, job.rule, self._last[name], due)  # equal jobs plan once
            found = plans.get(key)
            if found is None:
                found = plans[key] = self._plan(job, due, now)
            decisions, following = found
            due_jobs.append((job, decisions))
            self._last[name] = max(self._last[name], decisions[-1].slot)
            heapq.heappush(self._heap, self._entry(following, name))
        return self._write(due_jobs, keep_going)

    def _plan(
        self, job: ScheduledJob, due: datetime, now: datetime
    ) -> tuple[list[Decision], datetime]:
        """Decisions for the slots in ``[due, now]`` and the slot after them.

        ``due`` is the first slot after the job's last recorded one, so the usual on-time case
        costs one ``next_after``; only after a stall are the slots up to now enumerated.
        """
        following = job.schedule.next_after(due)
        if following > now and job.rule.is_on_time(due, now):
            return [Decision(due, ENQUEUE, ON_TIME)], following  # the usual case
        slots = [due]
        if following <= now:
            slots.extend(job.schedule.iter_between(due, now))
            following = job.schedule.next_after(slots[-1])
        decisions = job.rule.decide(slots, now)
        decisions.sort(key=lambda d: d.slot)
        return decisions, following

    def _write(
        self,
        due_jobs: Sequence[tuple[ScheduledJob, list[Decision]]],
        keep_going: Callable[[], bool] | None,
    ) -> list[RunEvent]:
        """Skipped slots per job in one batch; enqueued slots ``WRITE_BATCH`` per transaction.

        ``keep_going`` is asked before each batch (the loop renews the lease there and stops
        a tick whose leadership is lost; the next leader reloads from the database).
        """
        events: list[RunEvent] = []
        enqueue: list[tuple[ScheduledJob, Decision]] = []
        for job, decisions in due_jobs:
            skipped = [d for d in decisions if d.action != ENQUEUE]
            if skipped:
                if keep_going is not None and not keep_going():
                    self.loaded = False
                    return events
                # Every slot a policy passes over is one it missed (skip, coalesced, over-cap).
                fresh = set(
                    self.runs.record_skipped(
                        job.name, [d.slot for d in skipped], tally=Tally.MISSED_SKIPPED
                    )
                )
                events.extend(
                    RunEvent(job.name, d.slot, d.action, d.reason, d.slot in fresh) for d in skipped
                )
            enqueue.extend((job, d) for d in decisions if d.action == ENQUEUE)
        for start in range(0, len(enqueue), WRITE_BATCH):
            if keep_going is not None and not keep_going():
                self.loaded = False
                break
            chunk = enqueue[start : start + WRITE_BATCH]
            results = self.runs.enqueue_runs(
                [(j.name, d.slot, j.max_attempts) for j, d in chunk],
                skip_running={j.name for j, _ in chunk if j.overlap == Overlap.SKIP},
                hold_running={
                    j.name for j, _ in chunk if j.one_at_a_time and j.overlap == Overlap.WAIT
                },
                late={(j.name, d.slot) for j, d in chunk if d.reason == CATCH_UP},
            )
            for (j, d), r in zip(chunk, results, strict=True):
                if r.created and r.outcome == SlotOutcome.SKIPPED:
                    reason = "overlap: the previous run is still running"
                    events.append(RunEvent(j.name, d.slot, RECORD_SKIPPED, reason, True))
                else:
                    events.append(RunEvent(j.name, d.slot, d.action, d.reason, r.created, r.job_id))
        events.sort(key=lambda e: (e.slot, e.job))
        return events

    # ------------------------------------------------------------------ heap helpers
    def _next_after(
        self, job: ScheduledJob, t: datetime, memo: dict[tuple[Any, datetime], datetime]
    ) -> datetime:
        key = (job.schedule, t)
        found = memo.get(key)
        if found is None:
            found = job.schedule.next_after(t)
            memo[key] = found
        return found

    def _entry(self, due: datetime, name: str) -> tuple[float, int, str, datetime]:
        return (due.timestamp(), next(self._seq), name, due)

    def _push(self, job: ScheduledJob, due: datetime) -> None:
        self._heap.append(self._entry(due, job.name))
