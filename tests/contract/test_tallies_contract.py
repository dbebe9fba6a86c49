"""Contract cases for ``store/tallies.py`` and the tallies the slot writes keep, on every
backend: what the switch from cron has bought, counted exactly where it happens.

- a slot another writer had recorded counts one duplicate fire (the Store, the direct writer
  of the cron line, and the scheduler's bulk write alike); a new slot counts nothing;
- a slot due while a run of an ``overlap`` job is live counts a start held back, whether it is
  recorded as skipped (``skip``) or waits (``wait``);
- the scheduler's missed slots count what the policy did: run late, or passed over;
- a job whose failed run was followed by a done run counts once as rescued;
- a database at schema step 4 (no ``job_tallies``) writes its slots and reads zeros.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store, open_store
from migrate_cron.store.direct import open_writer
from migrate_cron.store.models import AttemptRun, SwitchGains
from migrate_cron.vocabulary import SlotOutcome, Tally

SLOT = datetime(2026, 3, 1, 2, 30, tzinfo=UTC)


def gains(store: Store, kind: str, since: datetime | None = None) -> SwitchGains:
    return store.switch_gains({kind: since})[kind]


def test_tally_adds_up_in_the_current_hour_and_counts_from_the_switch(store: Store) -> None:
    store.tally("k", Tally.MISSED_RUN)
    store.tally("k", Tally.MISSED_RUN, 2)
    store.tally("k", Tally.MISSED_SKIPPED, 5)
    store.tally("other", Tally.MISSED_RUN, 7)
    store.tally("k", Tally.OVERLAP_HELD, 0)  # nothing to count: no row
    assert gains(store, "k") == SwitchGains("k", None, missed_run=3, missed_skipped=5)
    now = store.db_now()
    assert gains(store, "k", now).missed_run == 3  # this hour's row counts from its hour
    later = now + timedelta(hours=1)
    assert gains(store, "k", later) == SwitchGains("k", later)
    assert store.switch_gains({}) == {}
    with store.engine.connect() as conn:
        rows = conn.execute(text(f"SELECT COUNT(*) FROM {store.prefix}job_tallies")).scalar()
    assert rows == 3  # one row per (kind, what, hour)


def test_tallies_fall_in_the_hour_of_the_database_clock(db_url: str, store: Store) -> None:
    """With an injected clock, the hour is that clock's: two hours, two rows."""
    clock = FakeClock(datetime(2026, 3, 1, 9, 59, 59, tzinfo=UTC))
    timed = open_store(db_url, prefix=store.prefix, clock=clock)
    try:
        timed.tally("k", Tally.MISSED_SKIPPED)
        clock.advance(1)
        timed.tally("k", Tally.MISSED_SKIPPED, 2)
        since = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
        assert gains(timed, "k").missed_skipped == 3
        assert gains(timed, "k", since).missed_skipped == 2
        assert gains(timed, "k", since - timedelta(minutes=30)).missed_skipped == 3
    finally:
        timed.dispose()


def test_a_slot_fired_twice_counts_one_duplicate(db_url: str, store: Store) -> None:
    first = store.enqueue_run("job", SLOT)
    assert first.created
    assert gains(store, "job") == SwitchGains("job")  # the usual write counts nothing
    again = store.enqueue_run("job", SLOT)
    assert not again.created and again.job_id == first.job_id
    direct = open_writer(db_url, store.prefix)  # the cron line's writer on another host
    try:
        assert not direct.enqueue_run("job", SLOT, max_attempts=5).created
        assert direct.enqueue_run("job", SLOT + timedelta(minutes=1), max_attempts=5).created
    finally:
        direct.dispose()
    assert gains(store, "job").duplicate_fires == 2


def test_a_start_held_back_by_overlap_is_counted(db_url: str, store: Store) -> None:
    store.enqueue_run("skip", SLOT)
    store.enqueue_run("wait", SLOT)
    store.claim("w", 2, lease=60, kinds=["skip", "wait"])
    later = SLOT + timedelta(minutes=1)
    held = store.enqueue_run("skip", later, skip_if_running=True)
    assert held.created and held.outcome == SlotOutcome.SKIPPED
    waits = store.enqueue_run("wait", later, hold_if_running=True)
    assert waits.created and waits.outcome == SlotOutcome.ENQUEUED and waits.job_id
    direct = open_writer(db_url, store.prefix)
    try:
        at = later + timedelta(minutes=1)
        assert direct.enqueue_run("skip", at, max_attempts=5, skip_if_running=True).job_id is None
        assert direct.enqueue_run("wait", at, max_attempts=5, hold_if_running=True).job_id
    finally:
        direct.dispose()
    assert store.enqueue_run("free", later, skip_if_running=True).job_id  # nothing running
    assert gains(store, "skip").overlap_held == 2
    assert gains(store, "wait").overlap_held == 2
    assert gains(store, "free") == SwitchGains("free")


def test_the_scheduler_write_counts_duplicates_holds_and_late_runs(store: Store) -> None:
    store.enqueue_run("dup", SLOT)  # a host's enqueue got there first
    store.enqueue_run("busy", SLOT - timedelta(minutes=1))
    store.claim("w", 1, lease=60, kinds=["busy"])
    late = SLOT - timedelta(hours=1)
    results = store.enqueue_runs(
        [("dup", SLOT, 5), ("busy", SLOT, 5), ("late", late, 5), ("late", SLOT, 5)],
        skip_running={"busy"},
        late={("late", late)},
    )
    assert [r.created for r in results] == [False, True, True, True]
    assert results[1].outcome == SlotOutcome.SKIPPED
    assert gains(store, "dup") == SwitchGains("dup", duplicate_fires=1)
    assert gains(store, "busy") == SwitchGains("busy", overlap_held=1)
    assert gains(store, "late") == SwitchGains("late", missed_run=1)
    # Written again (a second scheduler): only duplicates are counted, nothing twice.
    store.enqueue_runs([("late", late, 5)], late={("late", late)})
    assert gains(store, "late") == SwitchGains("late", missed_run=1, duplicate_fires=1)


def test_missed_slots_passed_over_are_counted_once(store: Store) -> None:
    slots = [SLOT + timedelta(minutes=i) for i in range(4)]
    assert store.record_skipped("job", slots[:3], tally=Tally.MISSED_SKIPPED) == slots[:3]
    assert store.record_skipped("job", slots, batch=2, tally=Tally.MISSED_SKIPPED) == slots[3:]
    store.record_skipped("job", [SLOT + timedelta(hours=1)])  # no tally asked: none
    assert gains(store, "job").missed_skipped == 4


def _run(minute: int, **kw: object) -> AttemptRun:
    began = datetime(2026, 12, 3, 10, minute, tzinfo=UTC)
    return AttemptRun(began, began + timedelta(seconds=1), **kw)  # type: ignore[arg-type]


def test_a_job_that_failed_then_passed_on_retry_is_rescued_once(store: Store) -> None:
    saved = store.enqueue("k", max_attempts=5).job_id
    for minute in (0, 1):
        store.claim("w", 1, lease=30, kinds=["k"])
        assert store.fail("w", saved, "boom", retry_in=0, run=_run(minute, error="boom")) == "open"
    store.claim("w", 1, lease=30, kinds=["k"])
    assert store.complete("w", [saved], runs={saved: _run(2)}) == 1
    fine = store.enqueue("k").job_id
    store.claim("w", 1, lease=30, kinds=["k"])
    assert store.complete("w", [fine], runs={fine: _run(3)}) == 1
    lost = store.enqueue("k", max_attempts=1).job_id
    store.claim("w", 1, lease=30, kinds=["k"])
    assert store.fail("w", lost, "boom", run=_run(4, error="boom")) == "failed"
    assert gains(store, "k").rescued == 1
    switched = datetime(2026, 12, 3, 10, 2, 0, 500_000, tzinfo=UTC)
    assert gains(store, "k", switched).rescued == 1  # its done run came after the switch
    assert gains(store, "k", switched + timedelta(minutes=5)).rescued == 0
    assert gains(store, "other").rescued == 0


@pytest.fixture
def step4(db_url: str, store: Store) -> Iterator[Store]:
    """``store``'s database as schema step 4 left it: no console tables."""
    with store.engine.begin() as conn:
        for table in ("job_trend_periods", "job_tallies", "job_actions", "job_workers"):
            conn.execute(text(f"DROP TABLE {store.prefix}{table}"))
    old = open_store(db_url, prefix=store.prefix)
    try:
        yield old
    finally:
        old.dispose()
        store.create_schema()  # back for the fixture's drop


def test_a_step_4_database_writes_its_slots_and_counts_nothing(db_url: str, step4: Store) -> None:
    assert not step4.console_enabled()
    assert step4.enqueue_run("job", SLOT).created
    assert not step4.enqueue_run("job", SLOT).created
    direct = open_writer(db_url, step4.prefix)
    try:
        assert not direct.enqueue_run("job", SLOT, max_attempts=5).created
        assert direct.enqueue_run("job", SLOT + timedelta(minutes=1), max_attempts=5).created
    finally:
        direct.dispose()
    step4.enqueue_runs([("job", SLOT, 5)])
    step4.record_skipped("job", [SLOT - timedelta(hours=1)], tally=Tally.MISSED_SKIPPED)
    step4.tally("job", Tally.MISSED_RUN)
    assert gains(step4, "job") == SwitchGains("job")
