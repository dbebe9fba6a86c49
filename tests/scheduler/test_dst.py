"""DST through the scheduler, Vixie cron semantics (the table in docs/dst.md).

A fixed-time job (minute and hour both not starting with *) whose wall time is skipped runs once
right after the jump; in a repeated hour it runs once (first pass). Wildcard jobs follow the wall
clock: nothing in a skipped hour, both passes of a repeated one. Lord Howe shifts 30 minutes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from migrate_cron.clock import FakeClock
from migrate_cron.crontab.schedule import Schedule
from migrate_cron.scheduler.policy import MissedRunPolicy
from migrate_cron.scheduler.scheduler import ScheduledJob, Scheduler
from migrate_cron.scheduler.simulate import Downtime, simulate
from migrate_cron.store import Store

BERLIN_SPRING, BERLIN_FALL = "2026-03-29", "2026-10-25"
NY_SPRING, NY_FALL = "2026-03-08", "2026-11-01"
LH_SPRING, LH_FALL = "2026-10-04", "2026-04-05"  # southern hemisphere


def local_day(tz: str, day: str) -> tuple[datetime, datetime]:
    """(just before local midnight, just before the next local midnight), in UTC."""
    zone = ZoneInfo(tz)
    start = datetime.fromisoformat(day).replace(tzinfo=zone)
    end = (start + timedelta(days=1)).replace(tzinfo=zone)
    return (start - timedelta(minutes=1)).astimezone(UTC), (end - timedelta(seconds=1)).astimezone(
        UTC
    )


def fired(expr: str, tz: str, day: str) -> list[str]:
    """Slots the scheduler enqueues over one local day, as local wall time with offset."""
    job = ScheduledJob("j", Schedule.parse(expr, tz), MissedRunPolicy("skip"))
    start, end = local_day(tz, day)
    runs = simulate([job], start, end)
    assert all(r.action == "enqueue" and r.reason == "on-time" for r in runs)
    slots = [r.slot for r in runs]
    assert slots == sorted(set(slots)), "slots are unique and in order"
    zone = ZoneInfo(tz)
    return [s.astimezone(zone).strftime("%H:%M%z") for s in slots]


@pytest.mark.parametrize(
    ("tz", "day", "expr", "expected"),
    [
        # Spring forward: the wall time does not exist, the job runs once at the jump.
        ("Europe/Berlin", BERLIN_SPRING, "30 2 * * *", ["03:00+0200"]),
        ("America/New_York", NY_SPRING, "30 2 * * *", ["03:00-0400"]),
        ("Australia/Lord_Howe", LH_SPRING, "15 2 * * *", ["02:30+1100"]),
        ("Australia/Lord_Howe", LH_SPRING, "30 2 * * *", ["02:30+1100"]),
        # Fall back: the wall time exists twice, the job runs once (the first pass).
        ("Europe/Berlin", BERLIN_FALL, "30 2 * * *", ["02:30+0200"]),
        ("America/New_York", NY_FALL, "30 1 * * *", ["01:30-0400"]),
        ("Australia/Lord_Howe", LH_FALL, "45 1 * * *", ["01:45+1100"]),
        # Two fixed slots landing on the same instant count once.
        ("Europe/Berlin", BERLIN_SPRING, "0 2,3 * * *", ["03:00+0200"]),
        # Fixed-time jobs outside the repeated hour, or spanning it, are not repeated.
        ("America/New_York", NY_FALL, "30 2 * * *", ["02:30-0500"]),
        ("Europe/Berlin", BERLIN_FALL, "30 1-3 * * *", ["01:30+0200", "02:30+0200", "03:30+0100"]),
    ],
)
def test_fixed_time_job_runs_once_on_dst_days(
    tz: str, day: str, expr: str, expected: list[str]
) -> None:
    assert fired(expr, tz, day) == expected


@pytest.mark.parametrize(
    ("tz", "day", "count", "skipped_hour_absent", "repeated"),
    [
        ("Europe/Berlin", BERLIN_SPRING, 92, "02:", None),
        ("Europe/Berlin", BERLIN_FALL, 100, None, ("02:15+0200", "02:15+0100")),
        ("America/New_York", NY_SPRING, 92, "02:", None),
        ("America/New_York", NY_FALL, 100, None, ("01:15-0400", "01:15-0500")),
        ("Australia/Lord_Howe", LH_SPRING, 94, "02:1", None),
        ("Australia/Lord_Howe", LH_FALL, 98, None, ("01:45+1100", "01:45+1030")),
    ],
)
def test_every_15_minutes_keeps_wall_clock_behaviour(
    tz: str, day: str, count: int, skipped_hour_absent: str | None, repeated: tuple[str, str] | None
) -> None:
    got = fired("*/15 * * * *", tz, day)
    assert len(got) == count  # a 23 h, 25 h, 23.5 h or 24.5 h day
    if skipped_hour_absent:
        assert not [s for s in got if s.startswith(skipped_hour_absent)]
    if repeated:
        assert set(repeated) <= set(got)


@pytest.mark.parametrize(
    ("tz", "day", "expr", "count"),
    [
        ("Europe/Berlin", BERLIN_SPRING, "0 * * * *", 23),
        ("Europe/Berlin", BERLIN_FALL, "0 * * * *", 25),
        ("Australia/Lord_Howe", LH_FALL, "30 * * * *", 25),
    ],
)
def test_hourly_wildcard_follows_the_wall_clock(tz: str, day: str, expr: str, count: int) -> None:
    assert len(fired(expr, tz, day)) == count


def test_downtime_over_the_jump_backfills_the_gap_slot_once() -> None:
    job = ScheduledJob(
        "nightly", Schedule.parse("30 2 * * *", "Europe/Berlin"), MissedRunPolicy("backfill")
    )
    runs = simulate(
        [job],
        datetime(2026, 3, 28, 12, tzinfo=UTC),
        datetime(2026, 3, 30, 12, tzinfo=UTC),
        [Downtime(datetime(2026, 3, 29, 0, tzinfo=UTC), datetime(2026, 3, 29, 5, tzinfo=UTC))],
    )
    assert [(r.slot, r.action, r.reason) for r in runs] == [
        (datetime(2026, 3, 29, 1, tzinfo=UTC), "enqueue", "catch-up"),
        (datetime(2026, 3, 30, 0, 30, tzinfo=UTC), "enqueue", "on-time"),
    ]


@pytest.mark.parametrize("tz", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
def test_fall_back_day_on_a_real_database_has_one_job_per_slot(store: Store, tz: str) -> None:
    day = {"Europe/Berlin": BERLIN_FALL, "America/New_York": NY_FALL}.get(tz, LH_FALL)
    jobs = [
        ScheduledJob("fixed", Schedule.parse("30 1 * * *", tz), MissedRunPolicy("skip")),
        ScheduledJob("hourly", Schedule.parse("30 * * * *", tz), MissedRunPolicy("skip")),
    ]
    start, end = local_day(tz, day)
    clock = FakeClock(start)
    scheduler = Scheduler(jobs, store, clock)
    scheduler.tick()
    while (due := scheduler.next_due()) is not None and due <= end:
        clock.set(due)
        scheduler.tick()
    fixed = store.list_jobs(kind="fixed")
    hourly = store.list_jobs(kind="hourly", limit=100)
    assert len(fixed) == 1
    assert len(hourly) == 25  # the repeated xx:30 runs in both passes (Lord Howe: 01:30)
    assert len({j.scheduled_for for j in hourly}) == len(hourly)
