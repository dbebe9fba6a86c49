"""The scheduler's tick on a real database (SQLite, PostgreSQL, MariaDB) with an injected clock:
restarts, stalls, policies, never-seen jobs, split brain."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from migrate_cron.clock import FakeClock
from migrate_cron.crontab.schedule import Schedule
from migrate_cron.registry import parse_registry
from migrate_cron.scheduler.policy import CATCH_UP, ON_TIME, MissedRunPolicy
from migrate_cron.scheduler.scheduler import ScheduledJob, Scheduler, owned_jobs
from migrate_cron.store import Store


def at(hour: int, minute: int = 0, second: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 6, day, hour, minute, second, tzinfo=UTC)


def hourly(policy: str, cap: int = 10, grace: float = 60, name: str = "hourly") -> ScheduledJob:
    return ScheduledJob(name, Schedule.parse("0 * * * *"), MissedRunPolicy(policy, cap, grace))


def job_slots(store: Store, name: str) -> list[datetime]:
    jobs = store.list_jobs(kind=name, limit=10_000)
    for j in jobs:
        assert j.kind == name
        assert j.scheduled_for is not None, "every scheduled job row carries its slot"
    return sorted(j.scheduled_for for j in jobs if j.scheduled_for is not None)


def skipped_slots(store: Store, name: str) -> list[datetime]:
    runs = store.runs(name, limit=100_000)
    return sorted(r["scheduled_for"] for r in runs if r["outcome"] == "skipped")


def run_until(scheduler: Scheduler, clock: FakeClock, end: datetime) -> None:
    """Drive the scheduler like its loop does: tick, jump to the next due slot, repeat."""
    scheduler.tick()
    while (due := scheduler.next_due()) is not None and due <= end:
        clock.set(due)
        scheduler.tick()


def down_from_1_to_4(store: Store, job: ScheduledJob, restart: datetime) -> Scheduler:
    """Up at 00:00 (enqueues 00:00), down 01:00-04:00, a new process starts at ``restart``."""
    clock = FakeClock(at(0))
    first = Scheduler([job], store, clock)
    first.tick()
    assert job_slots(store, job.name) == [at(0)]
    clock = FakeClock(restart)
    second = Scheduler([job], store, clock)
    run_until(second, clock, at(4, 30))
    return second


def test_skip_records_three_skipped_rows_and_no_extra_job(store: Store) -> None:
    down_from_1_to_4(store, hourly("skip"), at(4))
    assert job_slots(store, "hourly") == [at(0), at(4)]
    assert skipped_slots(store, "hourly") == [at(1), at(2), at(3)]


def test_run_once_enqueues_the_latest_missed_slot(store: Store) -> None:
    down_from_1_to_4(store, hourly("run-once"), at(4))
    assert job_slots(store, "hourly") == [at(0), at(3), at(4)]
    assert skipped_slots(store, "hourly") == [at(1), at(2)]


def test_backfill_enqueues_each_missed_slot_then_the_next_on_time(store: Store) -> None:
    clock = FakeClock(at(0))
    Scheduler([hourly("backfill")], store, clock).tick()
    clock.set(at(3, 59, 30))  # restarted just before 04:00
    restarted = Scheduler([hourly("backfill")], store, clock)
    events = restarted.tick()
    assert [(e.slot, e.reason) for e in events] == [
        (at(1), CATCH_UP),
        (at(2), CATCH_UP),
        (at(3), CATCH_UP),
    ]
    assert restarted.next_due() == at(4)
    clock.set(at(4))
    assert [(e.slot, e.reason) for e in restarted.tick()] == [(at(4), ON_TIME)]
    assert job_slots(store, "hourly") == [at(0), at(1), at(2), at(3), at(4)]
    assert skipped_slots(store, "hourly") == []


def test_backfill_cap_enqueues_two_and_records_the_rest_skipped(store: Store) -> None:
    down_from_1_to_4(store, hourly("backfill", cap=2), at(4))
    assert job_slots(store, "hourly") == [at(0), at(2), at(3), at(4)]
    assert skipped_slots(store, "hourly") == [at(1)]


@pytest.mark.parametrize("policy", ["skip", "run-once", "backfill"])
def test_a_stall_while_running_goes_through_the_same_policy(store: Store, policy: str) -> None:
    clock = FakeClock(at(0))
    scheduler = Scheduler([hourly(policy)], store, clock)
    scheduler.tick()
    assert scheduler.next_due() == at(1)
    clock.set(at(4, 0, 20))  # the VM was paused for four hours
    events = scheduler.tick()
    expected_jobs = {
        "skip": [at(0), at(4)],
        "run-once": [at(0), at(3), at(4)],
        "backfill": [at(0), at(1), at(2), at(3), at(4)],
    }[policy]
    assert job_slots(store, "hourly") == expected_jobs
    assert sorted(e.slot for e in events) == [at(1), at(2), at(3), at(4)]
    assert scheduler.next_due() == at(5)


def test_a_job_never_seen_starts_from_now_with_nothing_missed(store: Store) -> None:
    clock = FakeClock(at(5, 30))
    scheduler = Scheduler([hourly("backfill")], store, clock)
    assert scheduler.tick() == []
    assert scheduler.next_due() == at(6)
    assert store.runs("hourly") == []


def test_a_job_never_seen_still_fires_a_slot_within_its_grace(store: Store) -> None:
    # `scheduler --once` from cron starts a few seconds after the minute.
    clock = FakeClock(at(6, 0, 7))
    events = Scheduler([hourly("skip")], store, clock).tick()
    assert [(e.slot, e.reason, e.created) for e in events] == [(at(6), ON_TIME, True)]


def test_repeating_a_tick_or_a_second_scheduler_enqueues_nothing_twice(store: Store) -> None:
    clock = FakeClock(at(0))
    a = Scheduler([hourly("backfill")], store, clock)
    b = Scheduler([hourly("backfill")], store, clock)  # a split brain: both believe they lead
    a.tick()
    b.tick()
    clock.set(at(3, 0, 5))
    first = a.tick()
    second = b.tick()
    assert [e.created for e in first] == [True, True, True]
    assert [e.created for e in second] == [False, False, False]
    assert [e.job_id for e in first] == [e.job_id for e in second]
    assert job_slots(store, "hourly") == [at(0), at(1), at(2), at(3)]


def test_enqueued_jobs_are_the_registry_kind_with_their_slot(store: Store) -> None:
    job = ScheduledJob(
        "export", Schedule.parse("*/30 * * * *"), MissedRunPolicy("skip"), max_attempts=3
    )
    clock = FakeClock(at(0))
    run_until(Scheduler([job], store, clock), clock, at(2))
    jobs = store.list_jobs(kind="export")
    assert sorted(j.scheduled_for for j in jobs if j.scheduled_for) == [
        at(0),
        at(0, 30),
        at(1),
        at(1, 30),
        at(2),
    ]
    assert {(j.state, j.max_attempts) for j in jobs} == {("open", 3)}


def test_heap_orders_jobs_across_timezones(store: Store) -> None:
    jobs = [
        ScheduledJob("tokyo", Schedule.parse("0 9 * * *", "Asia/Tokyo")),  # 00:00 UTC
        ScheduledJob("berlin", Schedule.parse("0 9 * * *", "Europe/Berlin")),  # 07:00 UTC
        ScheduledJob("ny", Schedule.parse("0 9 * * *", "America/New_York")),  # 13:00 UTC
    ]
    clock = FakeClock(at(0, 30))
    scheduler = Scheduler(jobs, store, clock)
    fired: list[tuple[str, datetime]] = []
    scheduler.tick()
    while (due := scheduler.next_due()) is not None and due < at(0, 0, 0, day=3):
        clock.set(due)
        fired.extend((e.job, e.slot) for e in scheduler.tick())
    assert fired == [
        ("berlin", at(7)),
        ("ny", at(13)),
        ("tokyo", at(0, day=2)),
        ("berlin", at(7, day=2)),
        ("ny", at(13, day=2)),
    ]


def test_a_long_outage_of_a_minutely_job_records_every_skipped_slot(store: Store) -> None:
    job = ScheduledJob("minutely", Schedule.parse("* * * * *"), MissedRunPolicy("skip"))
    store.enqueue_run("minutely", at(0))
    clock = FakeClock(at(20, 0, 30))
    events = Scheduler([job], store, clock).tick()
    assert len(events) == 20 * 60
    assert len(skipped_slots(store, "minutely")) == 20 * 60 - 1
    assert job_slots(store, "minutely") == [at(0), at(20)]


def test_load_reads_positions_from_the_database(store: Store) -> None:
    store.enqueue_run("a", at(2))
    store.record_skipped("a", [at(3)])
    store.enqueue_run("b", at(1))
    assert store.last_runs(["a", "b", "c"]) == {"a": at(3), "b": at(1)}
    assert store.last_runs() == {"a": at(3), "b": at(1)}
    assert store.record_skipped("a", [at(3), at(4)]) == [at(4)]


def test_owned_jobs_are_scheduler_mode_unless_all() -> None:
    reg = parse_registry(
        {
            "jobs": {
                "a": {"command": "true", "schedule": "* * * * *", "mode": "scheduler"},
                "b": {"command": "true", "schedule": "* * * * *", "mode": "enqueue"},
                "c": {"command": "true", "mode": "scheduler"},  # no schedule: a queue kind
            }
        }
    )
    assert [s.name for s in owned_jobs(reg)] == ["a"]
    assert [s.name for s in owned_jobs(reg, include_all=True)] == ["a", "b"]


def test_scheduled_job_from_spec_carries_the_rule() -> None:
    reg = parse_registry(
        {
            "jobs": {
                "n": {
                    "command": "true",
                    "schedule": "30 2 * * *",
                    "timezone": "Europe/Berlin",
                    "policy": "backfill",
                    "max_backfill": 3,
                    "misfire_grace": 120,
                    "max_attempts": 2,
                }
            }
        }
    )
    job = ScheduledJob.from_spec(reg.get("n"))
    assert job.schedule == Schedule("30 2 * * *", "Europe/Berlin")
    assert job.rule == MissedRunPolicy("backfill", 3, 120)
    assert job.max_attempts == 2
    with pytest.raises(ValueError, match="unique"):
        Scheduler([job, job], None, FakeClock())  # type: ignore[arg-type]


def test_clock_jumping_backwards_enqueues_nothing_twice(store: Store) -> None:
    clock = FakeClock(at(0))
    scheduler = Scheduler([hourly("backfill")], store, clock)
    run_until(scheduler, clock, at(3))
    clock.set(at(1, 30))  # NTP stepped the clock back
    assert scheduler.tick() == []
    clock.set(at(4))
    assert [e.slot for e in scheduler.tick()] == [at(4)]
    assert job_slots(store, "hourly") == [at(0), at(1), at(2), at(3), at(4)]


def test_enqueue_runs_keeps_request_order_and_dedupes(store: Store) -> None:
    existing = store.enqueue_run("b", at(1))
    got = store.enqueue_runs([("b", at(2), 3), ("a", at(1), 5), ("b", at(1), 5)], batch=2)
    assert [r.created for r in got] == [True, True, False]
    assert got[2].job_id == existing.job_id
    new = store.get(got[0].job_id)  # type: ignore[arg-type]
    assert new is not None and (new.kind, new.scheduled_for, new.max_attempts) == ("b", at(2), 3)
    assert store.enqueue_runs([]) == []
