"""The status report and its threshold checks: plain values in, plain values out.

The store answers with raw facts (``QueueStatus``: counts, timestamps, the newest slot of each
scheduled job). This module turns them into the numbers an operator reads — the age of the
oldest ready job, run-time percentiles per kind, scheduling lag, the next slot — and decides
which thresholds are breached. No I/O and no clock: ``now`` comes in with the facts, so every
number is tested with known timestamps.

Scheduling lag applies only to slots someone promised (``unpromised``: the scheduler's, or an
``enqueue`` line's on a schedule). It is the worst of:
- the slot after the newest recorded one is due but not recorded: ``now - that slot`` (the
  scheduler is down or behind; without this a dead scheduler would look perfectly on time);
- the newest slot's job started: ``started_at - slot`` (how late the run began);
- the newest slot's job has not started: ``now - slot`` (still waiting, and growing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from migrate_cron.ops.bought import gains_to_dict
from migrate_cron.ops.durations import format_duration
from migrate_cron.registry import JobSpec
from migrate_cron.store.models import KindStatus, QueueStatus, SlotStatus, SwitchGains
from migrate_cron.vocabulary import ALL_COUNTS, JobState, Mode, SlotOutcome

#: ``(spec, after) -> first slot strictly after ``after``, or None`` — injectable for tests.
SlotFinder = Callable[[JobSpec, datetime], datetime | None]


@dataclass(frozen=True)
class ScheduleReport:
    """A scheduled job's newest slot, how late it ran, and when it runs next."""

    job: str
    expression: str | None = None
    timezone: str | None = None
    last_slot: datetime | None = None
    last_outcome: str | None = None
    enqueued_at: datetime | None = None
    job_id: int | None = None
    job_state: str | None = None
    started_at: datetime | None = None
    lag: float | None = None
    lag_reason: str | None = None
    missed_slot: datetime | None = None
    next_slot: datetime | None = None


@dataclass(frozen=True, slots=True)
class KindReport(KindStatus):
    """A kind's store facts plus what the report derives: the oldest ready job's age and the
    schedule (slots, lag) from the registry."""

    oldest_ready_age: float | None = None
    schedule: ScheduleReport | None = None


@dataclass(frozen=True)
class StatusReport:
    now: datetime
    since: datetime
    kinds: tuple[KindReport, ...] = ()
    #: Paused kinds (and ``@scheduler``) → who paused them (``migrate-cron pause``).
    paused: Mapping[str, str] = field(default_factory=dict)
    #: The scheduler leader lease: (holder, seconds until it expires; negative once expired).
    leader: tuple[str, float] | None = None
    #: Per job off cron, what the switch has bought (``ops.bought``; needs the registry).
    since_switch: Mapping[str, SwitchGains] = field(default_factory=dict)

    @property
    def window(self) -> float:
        return (self.now - self.since).total_seconds()

    @property
    def totals(self) -> dict[str, int]:
        return {k.value: sum(getattr(r, k) for r in self.kinds) for k in ALL_COUNTS}


@dataclass(frozen=True)
class Thresholds:
    """``None`` switches a check off. Limits are inclusive: a value equal to it is fine."""

    max_age: float | None = 300.0
    max_failed: int | None = 0
    max_lag: float | None = 120.0


@dataclass(frozen=True)
class Breach:
    threshold: str
    subject: str
    value: float
    limit: float
    message: str = field(compare=False)


def next_slot_of(spec: JobSpec, after: datetime) -> datetime | None:
    """The registry's schedule, read like cron in the job's timezone; None if it has none."""
    if not spec.schedule:
        return None
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    try:
        return Schedule.parse(spec.schedule, spec.timezone).next_after(after)
    except ScheduleError:  # @reboot and friends have no next slot
        return None


def build_report(
    status: QueueStatus,
    specs: Iterable[JobSpec] = (),
    slot_after: SlotFinder = next_slot_of,
) -> StatusReport:
    """Combine store facts with the registry (schedules, and kinds that have no rows yet)."""
    now = status.now
    registry = {s.name: s for s in specs}
    slots = {s.job_name: s for s in status.slots}
    facts = {k.kind: k for k in status.kinds}
    names = sorted(set(facts) | set(registry) | set(slots))
    kinds = []
    for name in names:
        fact = facts.get(name, KindStatus(kind=name))
        spec = registry.get(name)
        schedule = None
        if slots.get(name) is not None or (spec is not None and spec.schedule):
            schedule = schedule_report(name, slots.get(name), spec, now, slot_after)
        kinds.append(_kind_report(fact, now, schedule))
    return StatusReport(now=now, since=status.since, kinds=tuple(kinds))


def _kind_report(fact: KindStatus, now: datetime, schedule: ScheduleReport | None) -> KindReport:
    age = None
    if fact.oldest_ready_at is not None:
        age = max(0.0, (now - fact.oldest_ready_at).total_seconds())
    facts = {f.name: getattr(fact, f.name) for f in fields(KindStatus)}
    return KindReport(**facts, oldest_ready_age=age, schedule=schedule)


def schedule_report(
    name: str,
    slot: SlotStatus | None,
    spec: JobSpec | None,
    now: datetime,
    slot_after: SlotFinder = next_slot_of,
) -> ScheduleReport:
    nxt = slot_after(spec, now) if spec is not None else None
    base = ScheduleReport(
        job=name,
        expression=spec.schedule if spec else None,
        timezone=spec.timezone if spec else None,
        next_slot=nxt,
    )
    if slot is None:
        return base
    missed = slot_after(spec, slot.slot) if spec is not None else None
    lag, reason = scheduling_lag(slot, now, missed)
    promise = unpromised(spec)
    if promise is not None:  # nobody owes this job a slot: a late start is nobody's lag
        lag, reason, missed = None, promise, None
    return ScheduleReport(
        job=name,
        expression=base.expression,
        timezone=base.timezone,
        last_slot=slot.slot,
        last_outcome=slot.outcome,
        enqueued_at=slot.enqueued_at,
        job_id=slot.job_id,
        job_state=slot.job_state,
        started_at=slot.started_at,
        lag=lag,
        lag_reason=reason,
        missed_slot=missed if missed is not None and missed <= now else None,
        next_slot=nxt,
    )


def unpromised(spec: JobSpec | None) -> str | None:
    """Why no slot of this job is owed to anyone (so lag does not apply), or None if one is.

    Slots are promised by the scheduler (``mode = "scheduler"``) and by a crontab ``enqueue``
    line of a job with a schedule (``mode = "enqueue"``). A job still on cron, or one with no
    schedule (run by hand, ``jobs run``, a retry), can start at any time without being late.
    Without a registry there is no way to tell, and every recorded slot counts.
    """
    if spec is None:
        return None
    if spec.mode == Mode.CRON:
        return "still on cron"
    if not spec.schedule:
        return "no schedule"
    return None


def scheduling_lag(
    slot: SlotStatus, now: datetime, following: datetime | None
) -> tuple[float | None, str | None]:
    """Seconds late and why (see the module docstring); (None, reason) when it does not apply."""
    if following is not None and following <= now:
        return (now - following).total_seconds(), "next slot not enqueued"
    if slot.outcome == SlotOutcome.SKIPPED:
        return None, "slot skipped"
    if slot.started_at is not None:
        return max(0.0, (slot.started_at - slot.slot).total_seconds()), "started"
    if slot.job_state == JobState.OPEN:
        return max(0.0, (now - slot.slot).total_seconds()), "not started yet"
    if slot.job_id is None or slot.job_state is None:
        return None, "job removed"
    return None, f"job {slot.job_state}"


def check(report: StatusReport, limits: Thresholds) -> list[Breach]:
    """Every breached threshold, per kind (age, failed) or per scheduled job (lag)."""
    breaches: list[Breach] = []
    for k in report.kinds:
        if (
            limits.max_age is not None
            and k.oldest_ready_age is not None
            and k.oldest_ready_age > limits.max_age
        ):
            breaches.append(
                Breach(
                    "max-age",
                    k.kind,
                    k.oldest_ready_age,
                    limits.max_age,
                    f"max-age: {k.kind}: oldest ready job has waited "
                    f"{format_duration(k.oldest_ready_age)} "
                    f"(limit {format_duration(limits.max_age)}, {k.ready} ready)",
                )
            )
        if limits.max_failed is not None and k.failed > limits.max_failed:
            breaches.append(
                Breach(
                    "max-failed",
                    k.kind,
                    k.failed,
                    limits.max_failed,
                    f"max-failed: {k.kind}: {k.failed} failed job{'s' if k.failed != 1 else ''}"
                    f" (limit {limits.max_failed}); see `migrate-cron jobs list --state failed"
                    f" --kind {k.kind}`",
                )
            )
        s = k.schedule
        if (
            limits.max_lag is not None
            and s is not None
            and s.lag is not None
            and s.lag > limits.max_lag
        ):
            breaches.append(
                Breach(
                    "max-lag",
                    s.job,
                    s.lag,
                    limits.max_lag,
                    f"max-lag: {s.job}: {_lag_words(s)} {format_duration(s.lag)} late "
                    f"(limit {format_duration(limits.max_lag)})",
                )
            )
    return breaches


def _lag_words(s: ScheduleReport) -> str:
    if s.lag_reason == "next slot not enqueued" and s.missed_slot is not None:
        return f"slot {s.missed_slot:%Y-%m-%d %H:%M}Z not enqueued,"
    if s.lag_reason == "not started yet" and s.last_slot is not None:
        return f"slot {s.last_slot:%Y-%m-%d %H:%M}Z not started,"
    if s.last_slot is not None:
        return f"slot {s.last_slot:%Y-%m-%d %H:%M}Z started"
    return "running"


def report_to_dict(report: StatusReport) -> dict[str, Any]:
    """The ``--json`` document: times ISO 8601 UTC, durations and ages in seconds."""
    return {
        "now": _iso(report.now),
        "since": _iso(report.since),
        "window_seconds": report.window,
        "totals": report.totals,
        "kinds": [_kind_dict(k) for k in report.kinds],
        "paused": dict(report.paused),
        "since_switch": {k: gains_to_dict(g) for k, g in sorted(report.since_switch.items())},
    }


def breaches_to_dict(breaches: Iterable[Breach]) -> list[dict[str, Any]]:
    return [
        {
            "threshold": b.threshold,
            "subject": b.subject,
            "value": b.value,
            "limit": b.limit,
            "message": b.message,
        }
        for b in breaches
    ]


def _kind_dict(k: KindReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": k.kind,
        "ready": k.ready,
        "scheduled": k.scheduled,
        "running": k.running,
        "done": k.done,
        "failed": k.failed,
        "cancelled": k.cancelled,
        "oldest_ready_age": k.oldest_ready_age,
        "duration_p50": k.duration_p50,
        "duration_p95": k.duration_p95,
        "duration_max": k.duration_max,
        "last_success": _iso(k.last_success),
        "last_failure": _iso(k.last_failure),
        "schedule": None,
    }
    if k.schedule is not None:
        out["schedule"] = {
            key: _iso(v) if isinstance(v, datetime) else v
            for key, v in _fields(k.schedule).items()
            if key != "job"
        }
    return out


def _fields(value: Any) -> Mapping[str, Any]:
    return {f.name: getattr(value, f.name) for f in fields(value)}


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value is not None else None
