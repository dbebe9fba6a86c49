"""Missed-run policies as pure functions: slots in, decisions out, no database, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrate_cron.crontab.schedule import Schedule
from migrate_cron.scheduler.policy import (
    CATCH_UP,
    COALESCED,
    ENQUEUE,
    MISSED,
    ON_TIME,
    OVER_CAP,
    POLICIES,
    MissedRunPolicy,
    plan,
)

HOURLY = Schedule.parse("0 * * * *")


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 6, 1, hour, minute, second, tzinfo=UTC)


def summary(decisions: list) -> list[tuple[str, str, str]]:  # type: ignore[type-arg]
    return [(d.slot.strftime("%H:%M"), d.action, d.reason) for d in decisions]


# The acceptance case: last recorded slot 00:00, scheduler down 01:00-04:00, back at 04:00.
def test_skip_records_the_missed_slots_and_runs_only_the_on_time_one() -> None:
    got = plan(HOURLY, at(0), at(4), MissedRunPolicy("skip"))
    assert summary(got) == [
        ("01:00", "skip", MISSED),
        ("02:00", "skip", MISSED),
        ("03:00", "skip", MISSED),
        ("04:00", ENQUEUE, ON_TIME),
    ]


def test_run_once_enqueues_only_the_latest_missed_slot() -> None:
    got = plan(HOURLY, at(0), at(4), MissedRunPolicy("run-once"))
    assert summary(got) == [
        ("01:00", "skip", COALESCED),
        ("02:00", "skip", COALESCED),
        ("03:00", ENQUEUE, CATCH_UP),
        ("04:00", ENQUEUE, ON_TIME),
    ]


def test_backfill_enqueues_every_missed_slot_oldest_first() -> None:
    got = plan(HOURLY, at(0), at(4), MissedRunPolicy("backfill", max_backfill=10))
    assert summary(got) == [
        ("01:00", ENQUEUE, CATCH_UP),
        ("02:00", ENQUEUE, CATCH_UP),
        ("03:00", ENQUEUE, CATCH_UP),
        ("04:00", ENQUEUE, ON_TIME),
    ]


def test_backfill_over_the_cap_keeps_the_newest_and_records_the_rest_skipped() -> None:
    got = plan(HOURLY, at(0), at(4), MissedRunPolicy("backfill", max_backfill=2))
    assert summary(got) == [
        ("01:00", "skip", OVER_CAP),
        ("02:00", ENQUEUE, CATCH_UP),
        ("03:00", ENQUEUE, CATCH_UP),
        ("04:00", ENQUEUE, ON_TIME),
    ]


def test_backfill_with_cap_zero_behaves_like_skip_for_missed_slots() -> None:
    got = plan(HOURLY, at(0), at(4), MissedRunPolicy("backfill", max_backfill=0))
    assert [d.action for d in got] == ["skip", "skip", "skip", ENQUEUE]


def test_grace_window_decides_what_is_on_time() -> None:
    rule = MissedRunPolicy("skip", misfire_grace=60)
    # Cron starts a few seconds late: still on time.
    assert summary(plan(HOURLY, at(0), at(1, 0, 59), rule)) == [("01:00", ENQUEUE, ON_TIME)]
    assert summary(plan(HOURLY, at(0), at(1, 1, 0), rule)) == [("01:00", ENQUEUE, ON_TIME)]
    # One second past the grace: missed.
    assert summary(plan(HOURLY, at(0), at(1, 1, 1), rule)) == [("01:00", "skip", MISSED)]
    # A long grace makes a stall invisible.
    long = MissedRunPolicy("skip", misfire_grace=4 * 3600)
    assert all(d.reason == ON_TIME for d in plan(HOURLY, at(0), at(4), long))


def test_nothing_due_and_clock_going_backwards_plan_nothing() -> None:
    rule = MissedRunPolicy("backfill")
    assert plan(HOURLY, at(1), at(1, 30), rule) == []
    assert plan(HOURLY, at(3), at(1), rule) == []  # the clock jumped back
    assert plan(HOURLY, at(3), at(3), rule) == []


def test_a_slot_equal_to_the_last_recorded_one_is_not_planned_again() -> None:
    got = plan(HOURLY, at(2), at(3), MissedRunPolicy("backfill"))
    assert [d.slot for d in got] == [at(3)]


def test_invalid_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="policy"):
        MissedRunPolicy("sometimes")
    with pytest.raises(ValueError, match="max_backfill"):
        MissedRunPolicy("backfill", max_backfill=-1)
    with pytest.raises(ValueError, match="misfire_grace"):
        MissedRunPolicy("skip", misfire_grace=-5)


def test_dst_gap_slot_is_planned_once_after_the_jump() -> None:
    berlin = Schedule.parse("30 2 * * *", "Europe/Berlin")
    day_before = datetime(2026, 3, 28, 1, 30, tzinfo=UTC)  # 02:30 CET
    after = datetime(2026, 3, 29, 6, 0, tzinfo=UTC)
    got = plan(berlin, day_before, after, MissedRunPolicy("backfill"))
    # 02:30 does not exist on 2026-03-29: cron runs it at the jump, 03:00 CEST = 01:00 UTC.
    assert [d.slot for d in got] == [datetime(2026, 3, 29, 1, 0, tzinfo=UTC)]


# ---------------------------------------------------------------------- properties
SLOT_LISTS = st.lists(st.integers(0, 10_000), unique=True, max_size=60).map(sorted)


@given(
    offsets=SLOT_LISTS,
    policy=st.sampled_from(POLICIES),
    cap=st.integers(0, 20),
    grace=st.integers(0, 3_000),
    extra=st.integers(0, 5_000),
)
def test_every_slot_gets_exactly_one_decision(
    offsets: list[int], policy: str, cap: int, grace: int, extra: int
) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    slots = [base + timedelta(minutes=o) for o in offsets]
    now = base + timedelta(minutes=(offsets[-1] if offsets else 0)) + timedelta(seconds=extra)
    rule = MissedRunPolicy(policy, cap, grace)
    got = rule.decide(slots, now)

    assert sorted(d.slot for d in got) == slots
    on_time = [s for s in slots if (now - s).total_seconds() <= grace]
    missed = [s for s in slots if (now - s).total_seconds() > grace]
    enqueued = [d.slot for d in got if d.action == ENQUEUE]
    # On-time slots always run, whatever the policy.
    assert set(on_time) <= set(enqueued)
    late = sorted(set(enqueued) - set(on_time))
    if policy == "skip":
        assert late == []
    elif policy == "run-once":
        assert late == missed[-1:]
    else:
        assert late == missed[len(missed) - min(cap, len(missed)) :]
    for d in got:
        assert (d.action == ENQUEUE) == d.enqueued
        assert d.reason in (ON_TIME, CATCH_UP, MISSED, COALESCED, OVER_CAP)
