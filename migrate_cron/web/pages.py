"""What each dashboard page shows, as plain values built from the Store's named operations.

The same read models as the CLI (``status``, ``jobs``, ``migrations``, ``verify``), so a
number on a page is the number the command prints. Functions take the store and the registry
and return frozen dataclasses the templates only format; no request objects here, so every
page's data is tested without HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_cron.errors import MigrateCronError
from migrate_cron.vocabulary import JobState, Mode, Policy

if TYPE_CHECKING:
    from migrate_cron.migration.progress import ProgressRow
    from migrate_cron.migration.verify import VerifyReport
    from migrate_cron.ops.bought import Bought
    from migrate_cron.ops.status import StatusReport
    from migrate_cron.registry import JobSpec, Registry, Source
    from migrate_cron.store import Store
    from migrate_cron.store.models import Attempt, Job, Trends
    from migrate_cron.web.job_story import CommandView, NextRetry, Run, Running

#: Rows on one page of the Failed shelf (an id cursor pages further, like ``jobs list``).
FAILED_PAGE = 100
#: Slots listed ahead on the Schedules page.
NEXT_SLOTS = 3
#: Days of slots ``verify`` compares on the Migration page (the CLI's default is 7; a page
#: that lists every job keeps it short).
VERIFY_DAYS = 1


def load(path: str | None) -> Registry | None:
    """The registry like the CLI finds it: the given file, or ``migrate-cron.toml`` if it
    exists; read on every request so an edit (a ``migrate``) shows without a restart."""
    from migrate_cron.config import DEFAULT_REGISTRY
    from migrate_cron.registry import load_registry

    if path is None:
        if not Path(DEFAULT_REGISTRY).exists():
            return None
        path = DEFAULT_REGISTRY
    return load_registry(path)


def specs_of(registry: Registry | None) -> list[JobSpec]:
    return list(registry) if registry is not None else []


# ---------------------------------------------------------------------- overview
@dataclass(frozen=True)
class Overview:
    report: StatusReport
    #: The scheduler leader: (holder, seconds its lease still runs; negative once expired).
    leader: tuple[str, float] | None
    #: The charts over time for the same window (``Store.trends``).
    trends: Trends | None = None
    #: The kinds table's p50/p95 come from rolled-up histograms (windows over an hour).
    approximate: bool = False


def overview(store: Store, registry: Registry | None, window: float) -> Overview:
    """``status`` over ``window`` seconds, the trends over the same window, and who leads
    the scheduler. Over a window longer than an hour the done counts and run times come from
    the rolled-up periods (``store/rolled.py``): the percentiles are then approximate."""
    from migrate_cron.ops.status import build_report
    from migrate_cron.store.leases import SCHEDULER_LEASE

    now = store.db_now()
    status = store.status(now - timedelta(seconds=window), now, rolled=True)
    report = replace(build_report(status, specs_of(registry)), paused=store.paused())
    leader = leader_of(store, now, SCHEDULER_LEASE)
    return Overview(report, leader, store.trends(window, now), status.approximate)


def leader_of(store: Store, now: datetime, lease: str) -> tuple[str, float] | None:
    held = store.lease_holder(lease)
    if held is None:
        return None
    return held[0], (held[1] - now).total_seconds()


# ---------------------------------------------------------------------- failed
@dataclass(frozen=True)
class FailedShelf:
    jobs: list[Job]
    total: int
    kind: str | None
    #: The cursor of the next page (the last id shown), None on the last page.
    next_after: int | None
    kinds: list[str] = field(default_factory=list)


def failed(
    store: Store, kind: str | None, after: int | None, limit: int = FAILED_PAGE
) -> FailedShelf:
    jobs = store.list_jobs(state=JobState.FAILED, kind=kind, limit=limit, before_id=after)
    total = store.count_jobs(kind=kind, states=(JobState.FAILED,))
    now = store.db_now()
    kinds = [k.kind for k in store.status(now, now, slots=False).kinds if k.failed]
    more = jobs[-1].id if len(jobs) == limit else None
    return FailedShelf(jobs, total, kind, more, kinds)


def output_tail(text: str | None, lines: int = 20) -> str:
    """The last ``lines`` lines of a job's output, as ``jobs show`` prints them."""
    if not text:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# ---------------------------------------------------------------------- job
@dataclass(frozen=True)
class JobDetail:
    job: Job
    attempts: list[Attempt]
    spec: JobSpec | None
    #: The database's clock when the page was read (elapsed times and waits are by it).
    now: datetime | None = None
    command: CommandView | None = None
    runs: list[Run] = field(default_factory=list)
    running: Running | None = None
    next_retry: NextRetry | None = None


def job_detail(store: Store, registry: Registry | None, job_id: int) -> JobDetail | None:
    """A job's story (``job_story.py``): its command as the worker runs it, its runs numbered
    as they happened, the run in progress or the retry it waits for."""
    from migrate_cron.web import job_story

    job = store.get(job_id)
    if job is None:
        return None
    spec = registry.jobs.get(job.kind) if registry is not None else None
    history = store.attempts(job_id)
    now = store.db_now()
    return JobDetail(
        job,
        history,
        spec,
        now=now,
        command=job_story.command_view(spec),
        runs=job_story.numbered(history),
        running=job_story.running(job, now),
        next_retry=job_story.next_retry(job, spec, now),
    )


# ---------------------------------------------------------------------- schedules
#: What the scheduler does with slots it missed while down, per policy (``simulate`` shows
#: the exact slots for a given downtime).
POLICY_WORDS: dict[str, str] = {
    Policy.SKIP: "missed slots are recorded as skipped",
    Policy.RUN_ONCE: "the latest missed slot runs once",
    Policy.BACKFILL: "every missed slot runs, up to max_backfill",
}


@dataclass(frozen=True)
class ScheduleRow:
    spec: JobSpec
    next_slots: list[datetime]
    paused: str | None
    lag: float | None
    lag_reason: str | None
    last_slot: datetime | None
    last_outcome: str | None

    @property
    def policy_words(self) -> str:
        words = POLICY_WORDS.get(self.spec.policy, self.spec.policy)
        return (
            f"{words} ({self.spec.max_backfill})" if self.spec.policy == Policy.BACKFILL else words
        )


def schedules(store: Store, registry: Registry | None) -> list[ScheduleRow]:
    """Every registry job with a schedule: its next slots, the newest recorded slot's lag
    (``status``'s rules: only slots someone promised), policy, mode and pause."""
    from migrate_cron.ops.status import build_report
    from migrate_cron.store.leases import SCHEDULER_PAUSE

    specs = [s for s in specs_of(registry) if s.schedule]
    if not specs:
        return []
    now = store.db_now()
    report = build_report(store.status(now, now), specs)
    reports = {k.kind: k.schedule for k in report.kinds if k.schedule is not None}
    paused = store.paused()
    rows = []
    for spec in specs:
        s = reports.get(spec.name)
        who = paused.get(spec.name)
        if who is None and SCHEDULER_PAUSE in paused and spec.mode == Mode.SCHEDULER:
            who = f"the scheduler (by {paused[SCHEDULER_PAUSE]})"
        rows.append(
            ScheduleRow(
                spec=spec,
                next_slots=next_slots(spec, now),
                paused=who,
                lag=s.lag if s else None,
                lag_reason=s.lag_reason if s else None,
                last_slot=s.last_slot if s else None,
                last_outcome=s.last_outcome if s else None,
            )
        )
    return rows


def next_slots(spec: JobSpec, after: datetime, count: int = NEXT_SLOTS) -> list[datetime]:
    """The next slots of the registry's schedule in the job's timezone (none for @reboot)."""
    if not spec.schedule:
        return []
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    try:
        return Schedule.parse(spec.schedule, spec.timezone).next_runs(after, count)
    except ScheduleError:
        return []


# ---------------------------------------------------------------------- migration
@dataclass(frozen=True)
class Origin:
    source: Source
    switched_at: datetime | None


@dataclass(frozen=True)
class MigrationRow:
    progress: ProgressRow
    origins: list[Origin]
    verify: VerifyReport | None
    verify_error: str | None = None
    #: What the switch has bought for the job (``ops.bought``); None while on cron.
    bought: Bought | None = None

    @property
    def verify_status(self) -> str:
        """``ok``, ``fail``, ``waiting`` (nothing could have run yet) or ``-``."""
        if self.verify is None:
            return "-"
        statuses = {c.status for c in self.verify.checks}
        if "fail" in statuses:
            return "fail"
        return "waiting" if "waiting" in statuses else "ok"


@dataclass(frozen=True)
class MigrationBoard:
    rows: list[MigrationRow]
    registry_path: str | None
    queue_error: str | None

    @property
    def bought(self) -> tuple[tuple[str, str, int], ...]:
        """Every switched job's figures added up (the board's summary)."""
        from migrate_cron.ops.bought import added_up

        return added_up(r.bought for r in self.rows if r.bought is not None)


def migration(store: Store, registry: Registry | None, now: datetime) -> MigrationBoard:
    """``migrations`` (mode, next step) with each job's origins and ``verify`` result."""
    if registry is None:
        return MigrationBoard([], None, None)
    from migrate_cron.migration.progress import progress

    rows, error = progress(registry, lambda names: store.kind_history(list(names)))
    specs = registry.jobs
    gains = _since_switch(store, registry) if error is None else {}
    out = []
    for row in rows:
        spec = specs[row.name]
        origins = [
            Origin(src, m.switched_at if (m := spec.migration_of(src)) else None)
            for src in spec.sources
        ]
        report, problem = _verify(store, registry, spec, now)
        out.append(MigrationRow(row, origins, report, problem, gains.get(row.name)))
    return MigrationBoard(out, registry.path, error)


def _since_switch(store: Store, registry: Registry) -> dict[str, Bought]:
    from migrate_cron.ops.bought import bought, since_switch

    return {k: bought(g) for k, g in since_switch(store, registry).items()}


def _verify(
    store: Store, registry: Registry, spec: JobSpec, now: datetime
) -> tuple[VerifyReport | None, str | None]:
    """``verify`` for a switched job (a job still on cron has nothing to verify yet)."""
    if spec.mode == Mode.CRON:
        return None, None
    from migrate_cron.migration.check_alive import read_liveness
    from migrate_cron.migration.verify import verify_job

    try:
        report = verify_job(
            registry,
            spec,
            files=None,
            days=VERIFY_DAYS,
            now=now,
            history=lambda since: store.kind_history([spec.name], since)[spec.name],
            live=lambda: read_liveness(store, spec.name),
        )
    except MigrateCronError as exc:
        return None, str(exc)
    return report, None
