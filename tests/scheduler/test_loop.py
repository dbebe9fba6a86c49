"""The scheduler loop in-process on a FakeClock: replaying time, leadership, outages, stop."""

from __future__ import annotations

import io
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from migrate_cron.clock import FakeClock
from migrate_cron.crontab.schedule import Schedule
from migrate_cron.scheduler.leader import DEFAULT_LEASE_NAME, Leadership
from migrate_cron.scheduler.log import SchedulerLog
from migrate_cron.scheduler.loop import SchedulerLoop
from migrate_cron.scheduler.policy import MissedRunPolicy
from migrate_cron.scheduler.scheduler import ScheduledJob, Scheduler
from migrate_cron.store import Store, open_store

START = datetime(2026, 6, 1, tzinfo=UTC)


def jobs() -> list[ScheduledJob]:
    return [
        ScheduledJob("q", Schedule.parse("*/15 * * * *"), MissedRunPolicy("skip")),
        ScheduledJob("h", Schedule.parse("5 * * * *", "Europe/Berlin"), MissedRunPolicy("skip")),
    ]


def make_loop(store: Store, clock: FakeClock, **kw) -> tuple[SchedulerLoop, io.StringIO]:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    lead = kw.pop("leadership", Leadership(store, ttl=5, holder="me"))
    loop = SchedulerLoop(Scheduler(jobs(), store, clock), lead, clock, log=SchedulerLog(out), **kw)
    return loop, out


def test_replay_enqueues_every_slot_then_releases_the_lease(store: Store) -> None:
    clock = FakeClock(START)
    loop, out = make_loop(store, clock, until=START + timedelta(hours=6), keep_events=True)
    result = loop.run()
    assert result.led and result.outages == 0
    q = sorted(j.scheduled_for for j in store.list_jobs(kind="q", limit=100) if j.scheduled_for)
    h = store.list_jobs(kind="h", limit=100)
    assert q == [START + timedelta(minutes=15 * i) for i in range(25)]
    assert len(h) == 6
    assert store.lease_holder(DEFAULT_LEASE_NAME) is None
    log = out.getvalue()
    assert "leading holder=me" in log and "released holder=me" in log
    assert log.count(" enqueue job=") == 31


def test_once_does_nothing_while_another_scheduler_leads(store: Store) -> None:
    assert store.acquire_lease(DEFAULT_LEASE_NAME, "other", 60)
    clock = FakeClock(START)
    loop, out = make_loop(store, clock, once=True, keep_events=True)
    result = loop.run()
    assert not result.led and result.events == []
    assert store.list_jobs() == []
    assert store.lease_holder(DEFAULT_LEASE_NAME)[0] == "other"  # type: ignore[index]
    assert "another scheduler holds the lease" in out.getvalue()


def test_without_a_lease_every_loop_acts_and_the_slot_key_dedupes(store: Store) -> None:
    clock = FakeClock(START)
    for _ in range(2):
        clock.set(START)
        loop, _out = make_loop(store, clock, leadership=None, until=START + timedelta(hours=1))
        assert loop.run().led
    assert len(store.list_jobs(kind="q")) == 5


def test_stop_before_the_first_tick_exits_without_acting(store: Store) -> None:
    clock = FakeClock(START)
    loop, _ = make_loop(store, clock)
    loop.stop.set()
    result = loop.run()
    assert result.ticks == 0 and store.list_jobs() == []


def test_database_outage_is_retried_and_nothing_is_lost(tmp_path: Path) -> None:
    """The database file's directory is missing at first (the database is unreachable); the
    loop logs, backs off and retries; once it appears, every slot is enqueued."""
    db_dir = tmp_path / "later"
    url = f"sqlite:///{db_dir / 'q.db'}"
    store = open_store(url)
    clock = FakeClock(START)
    loop, out = make_loop(
        store, clock, until=START + timedelta(hours=2), backoff_initial=0.02, backoff_max=0.1
    )
    results = []
    thread = threading.Thread(target=lambda: results.append(loop.run()), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while out.getvalue().count(" outage ") < 2:
            assert time.monotonic() < deadline, out.getvalue()
            time.sleep(0.01)
        # The database appears whole: made aside, then its directory renamed into place. Made
        # in place, the loop could connect between the directory and the tables and meet a
        # database without tables (not an outage: it stops, as a scheduler should).
        staging = tmp_path / "staging"
        staging.mkdir()
        ready = open_store(f"sqlite:///{staging / 'q.db'}")
        ready.create_schema()
        ready.dispose()
        staging.rename(db_dir)
        thread.join(timeout=60)
        assert not thread.is_alive()
    finally:
        loop.stop.set()
        thread.join(timeout=10)
    (result,) = results
    assert result.outages >= 2 and result.led
    assert "cannot use the database" in out.getvalue()
    q = sorted(j.scheduled_for for j in store.list_jobs(kind="q") if j.scheduled_for)
    assert q == [START + timedelta(minutes=15 * i) for i in range(9)]
    store.dispose()
