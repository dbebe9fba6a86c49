"""Plain values the store returns; no ORM objects, so nothing accumulates in memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# Defined in results.py (the cron path loads only them), re-exported here with the others.
from migrate_cron.store.results import EnqueueResult as EnqueueResult
from migrate_cron.store.results import RunResult as RunResult

# Defined with the project's other words, re-exported beside the values that hold them.
from migrate_cron.vocabulary import AttemptOutcome, SlotOutcome
from migrate_cron.vocabulary import EffectStatus as EffectStatus
from migrate_cron.vocabulary import JobState as JobState


@dataclass(frozen=True, slots=True)
class Job:
    id: int
    kind: str
    ref: str | None
    payload: Any
    state: str
    attempts: int
    max_attempts: int
    run_at: datetime
    scheduled_for: datetime | None
    locked_by: str | None
    locked_until: datetime | None
    last_error: str | None
    output: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class ReapResult:
    reopened: int
    failed: int


@dataclass(frozen=True, slots=True)
class CleanupResult:
    done: int
    failed: int
    cancelled: int
    scheduled_runs: int
    #: Rows of workers not seen within the done jobs' retention.
    workers: int = 0
    #: Operators' actions older than the failed jobs' retention.
    actions: int = 0


@dataclass(frozen=True, slots=True)
class KindStatus:
    """One kind in ``Store.status``: live counts, and what happened inside the window.

    ``done`` and the durations cover jobs finished since the window start; ``failed`` and
    ``cancelled`` are all rows in that state (a failed job needs a person until handled).
    """

    kind: str
    ready: int = 0
    scheduled: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0
    cancelled: int = 0
    oldest_ready_at: datetime | None = None
    duration_p50: float | None = None
    duration_p95: float | None = None
    duration_max: float | None = None
    last_success: datetime | None = None
    last_failure: datetime | None = None


@dataclass(frozen=True, slots=True)
class SlotStatus:
    """The newest recorded cron slot of a scheduled job and the job it enqueued (if any)."""

    job_name: str
    slot: datetime
    outcome: SlotOutcome
    enqueued_at: datetime
    job_id: int | None = None
    job_state: JobState | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """Raw facts for ``migrate-cron status``; ``migrate_cron.ops.status`` turns them into a
    report (ages, lag, next slots) and checks thresholds."""

    now: datetime
    since: datetime
    kinds: tuple[KindStatus, ...] = ()
    slots: tuple[SlotStatus, ...] = ()
    #: The run-time percentiles come from rolled-up histograms (``store/rolled.py``).
    approximate: bool = False


@dataclass(frozen=True, slots=True)
class KindHistory:
    """What happened to one job kind's rows created since a moment (a crontab line's switch):
    counts per state, jobs that needed more than one attempt, the newest success, and the
    newest error still on record (a later success clears a job's own error)."""

    kind: str
    open: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0
    cancelled: int = 0
    retried: int = 0
    claimed: int = 0  # jobs a worker took at least once (attempts > 0)
    last_success: datetime | None = None
    last_error: str | None = None
    last_error_job: int | None = None

    @property
    def total(self) -> int:
        return self.open + self.running + self.done + self.failed + self.cancelled


@dataclass(frozen=True, slots=True)
class Effect:
    """One ledger row. ``holder`` is ``host:pid`` of the run that last took the key."""

    key: str
    status: EffectStatus
    holder: str | None
    job_id: int | None
    attempts: int
    exit_code: int | None
    attempted_at: datetime
    finished_at: datetime | None
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class EffectClaim:
    """What ``Store.effect_begin`` found: ``won`` — this caller recorded ``attempted`` and must
    run the effect (then ``effect_finish`` with ``effect.attempts`` as its fence); otherwise
    ``effect`` is the row that stopped it (``done`` and unexpired, or ``attempted``)."""

    won: bool
    effect: Effect


@dataclass(frozen=True, slots=True)
class AttemptRun:
    """What the worker knows of one finished run, for the ``job_attempts`` history: the run's
    own start and end (not the claim or the outcome's write), its exit code, error and output."""

    started_at: datetime
    finished_at: datetime
    exit_code: int | None = None
    error: str | None = None
    output: str | None = None
    #: When the job became due for this run (its ``run_at`` at the claim): the wait's start.
    ready_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt as the finisher hands it to ``fail_many``: the arguments of
    ``fail`` for one job, so that a batch of them can be written together."""

    job_id: int
    attempt: int | None
    error: str
    retry_in: float = 0.0
    output: str | None = None
    terminal: bool = False
    run: AttemptRun | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One row of the ``job_attempts`` history (``jobs show``)."""

    job_id: int
    kind: str
    attempt: int
    worker: str
    started_at: datetime
    finished_at: datetime
    outcome: AttemptOutcome
    exit_code: int | None
    error: str | None
    output_tail: str | None
    #: When the job became due for this run (None for rows from before schema step 5).
    ready_at: datetime | None = None

    @property
    def duration(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True, slots=True)
class SwitchGains:
    """What the queue did for one kind since its switch from cron that cron could not have:
    jobs that failed and then succeeded on a retry (cron would have lost the run), slots held
    back while a run still ran, slots missed while nothing scheduled (run late by the policy,
    or passed over), and slots fired by more than one host that ran once."""

    kind: str
    #: Counted from here (the switch); None: everything on record.
    since: datetime | None = None
    rescued: int = 0
    overlap_held: int = 0
    missed_run: int = 0
    missed_skipped: int = 0
    duplicate_fires: int = 0


@dataclass(frozen=True, slots=True)
class TrendGrid:
    """The buckets of a trend chart: ``count`` buckets of ``step`` seconds from ``start``
    (aligned on multiples of ``step`` since the epoch, so a minute bucket is a clock minute);
    the last one holds ``now`` and ends there."""

    start: datetime
    step: int
    count: int
    now: datetime

    def bucket_start(self, i: int) -> datetime:
        return self.start + timedelta(seconds=i * self.step)

    def bucket_end(self, i: int) -> datetime:
        """The end of bucket ``i``; the last bucket ends at ``now``, not in the future."""
        return min(self.bucket_start(i + 1), self.now)


@dataclass(frozen=True, slots=True)
class RuntimePoint:
    """Run-time percentiles of one kind's attempts finished in one bucket (seconds)."""

    runs: int
    p50: float | None
    p95: float | None


@dataclass(frozen=True, slots=True)
class Trends:
    """The console's trend charts over one window, one value per bucket of ``grid``:
    attempts done and failed, the age of the oldest ready job at each bucket's end (seconds),
    and per kind the run-time p50/p95 (None where the kind finished nothing)."""

    grid: TrendGrid
    done: tuple[int, ...]
    failed: tuple[int, ...]
    queue_age: tuple[float, ...]
    runtime: dict[str, tuple[RuntimePoint | None, ...]]
    #: The run-time percentiles come from rolled-up histograms (``store/rolled.py``).
    approximate: bool = False
