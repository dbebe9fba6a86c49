"""``simulate``: the real scheduler on a FakeClock and an in-memory ledger."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from migrate_cron.crontab.schedule import Schedule
from migrate_cron.scheduler.memory_runs import MemoryLedger
from migrate_cron.scheduler.policy import MissedRunPolicy
from migrate_cron.scheduler.scheduler import ScheduledJob
from migrate_cron.scheduler.simulate import Downtime, simulate, uptime


def at(hour: int, minute: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 6, day, hour, minute, tzinfo=UTC)


def test_uptime_splits_the_period_around_downtimes() -> None:
    spans = uptime(
        at(0), at(10), [Downtime(at(6), at(7)), Downtime(at(1), at(3)), Downtime(at(2), at(4))]
    )
    assert spans == [(at(0), at(1)), (at(4), at(6)), (at(7), at(10))]
    assert uptime(at(0), at(2), [Downtime(at(0), at(5))]) == []
    with pytest.raises(ValueError, match="ends before"):
        Downtime(at(3), at(2))
    with pytest.raises(ValueError, match="ends before"):
        uptime(at(3), at(2), [])


@pytest.mark.parametrize(
    ("policy", "cap", "enqueued", "skipped"),
    [
        ("skip", 10, [4, 5], [1, 2, 3]),
        ("run-once", 10, [3, 4, 5], [1, 2]),
        ("backfill", 10, [1, 2, 3, 4, 5], []),
        ("backfill", 2, [2, 3, 4, 5], [1]),
    ],
)
def test_downtime_from_1_to_4_per_policy(
    policy: str, cap: int, enqueued: list[int], skipped: list[int]
) -> None:
    job = ScheduledJob("h", Schedule.parse("0 * * * *"), MissedRunPolicy(policy, cap, 60))
    runs = simulate([job], at(0, 30), at(5, 30), [Downtime(at(0, 59), at(4))])
    assert [r.slot.hour for r in runs if r.action == "enqueue"] == enqueued
    assert [r.slot.hour for r in runs if r.action == "skip"] == skipped
    # Everything missed is decided when the scheduler comes back, at 04:00.
    assert {r.acted_at for r in runs if r.slot.hour < 4} <= {at(4)}
    assert [r.acted_at for r in runs if r.slot.hour == 5] == [at(5)]


def test_jobs_are_assumed_to_have_run_before_the_period() -> None:
    job = ScheduledJob("h", Schedule.parse("0 * * * *"), MissedRunPolicy("backfill"))
    runs = simulate([job], at(3, 30), at(4, 30))
    assert [r.slot for r in runs] == [at(4)]


def test_ledger_keeps_one_row_per_slot() -> None:
    ledger = MemoryLedger()
    first = ledger.enqueue_run("a", at(1))
    again = ledger.enqueue_run("a", at(1))
    assert first.created and not again.created and again.job_id == first.job_id
    assert ledger.record_skipped("a", [at(1), at(2)]) == [at(2)]
    assert ledger.last_runs(["a", "b"]) == {"a": at(2)}
    assert [r.outcome for r in ledger.for_job("a")] == ["enqueued", "skipped"]


def year_of_jobs() -> list[ScheduledJob]:
    """100 jobs shaped like a real crontab: nightly and weekly reports, hourly syncs (several
    jobs per common schedule, as in real crontabs), one poller; three timezones, all policies."""
    zones = ("UTC", "Europe/Berlin", "America/New_York")
    policies = ("skip", "run-once", "backfill")
    jobs = []
    for i in range(100):
        if i < 60:
            expr = f"{(i * 7) % 60} {i % 24} * * *"
        elif i < 84:
            expr = f"{i % 60} {i % 24} * * {i % 7}"
        elif i < 99:
            expr = f"{(i % 2) * 30} * * * *"
        else:
            expr = "*/15 * * * *"
        jobs.append(
            ScheduledJob(
                f"job{i:03d}",
                Schedule.parse(expr, zones[i % 3]),
                MissedRunPolicy(policies[i % 3], max_backfill=5, misfire_grace=60),
            )
        )
    return jobs


def test_a_year_of_simulated_time_for_100_jobs() -> None:
    jobs = year_of_jobs()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    down = [
        Downtime(datetime(2026, 3, 29, 0, tzinfo=UTC), datetime(2026, 3, 29, 6, tzinfo=UTC)),
        Downtime(datetime(2026, 8, 1, 12, tzinfo=UTC), datetime(2026, 8, 3, 12, tzinfo=UTC)),
    ]
    runs = simulate(jobs, start, start + timedelta(days=365), down)

    per_job = Counter(r.job for r in runs)
    assert set(per_job) == {j.name for j in jobs}
    # Every slot of the year is decided exactly once, whatever the policy.
    expected: dict[object, list[datetime]] = {}
    for job in jobs:
        if job.schedule not in expected:
            end = start + timedelta(days=365)
            expected[job.schedule] = list(job.schedule.iter_between(start, end))
        got = sorted(r.slot for r in runs if r.job == job.name)
        assert got == expected[job.schedule], job.name
    # Nothing during the downtimes was enqueued on time; run-once ran at most one per outage.
    for r in runs:
        for d in down:
            if d.start < r.slot < d.end - timedelta(minutes=1):
                assert r.reason != "on-time"
    late = Counter(r.job for r in runs if r.reason == "catch-up")
    for job in jobs:
        if job.rule.policy == "skip":
            assert late[job.name] == 0
        elif job.rule.policy == "run-once":
            assert late[job.name] <= len(down)
        else:
            assert late[job.name] <= len(down) * job.rule.max_backfill
