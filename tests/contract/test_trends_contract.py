"""Contract cases for ``store/trends.py``: the console's charts over time, on every backend.

A scripted hour of history (a burst of failures in one minute, a job that waited ten minutes,
a job claimed after two, one still waiting) gives exactly those numbers in exactly those
buckets, whatever the database does with timestamps.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun
from migrate_cron.store.trends import trend_grid
from tests.ops.helpers import clocked_store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HOUR = 3600.0


def at(minute: int, second: float = 0) -> datetime:
    """A moment of the scripted hour: 11:00 + ``minute`` minutes."""
    return NOW - timedelta(hours=1) + timedelta(minutes=minute, seconds=second)


@pytest.fixture
def clocked(db_url: str, table_prefix: str) -> Iterator[tuple[Store, FakeClock]]:
    with clocked_store(db_url, table_prefix, NOW) as pair:
        yield pair


def run(store: Store, kind: str, ready: datetime | None, start: datetime, seconds: float,
        *, ok: bool) -> None:  # fmt: skip
    """One job of ``kind`` that became due at ``ready`` and ran from ``start``."""
    job_id = store.enqueue(kind, max_attempts=1).job_id
    assert job_id is not None
    [claimed] = store.claim("w", 1, lease=30, kinds=[kind])
    assert claimed.id == job_id
    done = AttemptRun(start, start + timedelta(seconds=seconds), ready_at=ready)
    if ok:
        assert store.complete("w", [job_id], runs={job_id: done}) == 1
    else:
        assert store.fail("w", job_id, "boom", run=done) == "failed"


def script(store: Store, clock: FakeClock) -> None:
    # A burst of 5 failures inside 11:42, 1..5 s each; no wait (due when they started).
    for n in range(5):
        start = at(42, 2 + 10 * n)
        run(store, "export", start, start, n + 1, ok=False)
    # 11:50: two successes of 2 s and 4 s.
    run(store, "export", at(49, 1), at(50, 1), 2, ok=True)
    run(store, "export", at(50, 3), at(50, 3), 4, ok=True)
    # Due at 11:10, started at 11:20 (ten minutes waiting), done in 30 s.
    run(store, "report", at(10), at(20), 30, ok=True)
    # A run written before schema step 5 (no ready_at): left out of the queue age.
    run(store, "report", None, at(30, 30), 1, ok=True)
    # Due at 11:28, claimed at 11:30, still running.
    clock.set(at(28))
    store.enqueue("long", max_attempts=1)
    clock.set(at(30))
    assert len(store.claim("w", 1, lease=3600, kinds=["long"])) == 1
    # Due at 11:55 and still waiting at noon.
    clock.set(NOW)
    store.enqueue("late", run_at=at(55))


def test_failures_and_successes_land_in_their_minute(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    script(store, clock)
    grid = trend_grid(HOUR, NOW)
    assert (grid.start, grid.step, grid.count) == (at(0), 60, 61)
    done, failed = store.throughput_trend(grid)
    assert {i: n for i, n in enumerate(failed) if n} == {42: 5}
    assert {i: n for i, n in enumerate(done) if n} == {20: 1, 30: 1, 50: 2}


def test_the_oldest_ready_job_ages_along_its_wait(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    script(store, clock)
    ages = store.queue_age_trend(trend_grid(HOUR, NOW))
    minutes = {i: a / 60 for i, a in enumerate(ages) if a}
    # Bucket i ends at 11:00 + (i + 1) min. Due 11:10, started 11:20: 0..10 min at the ends
    # 11:10..11:20; due 11:28, claimed 11:30: 1, 2 min; due 11:49:01, started 11:50:01: 59 s
    # at 11:50; due 11:55, waiting: 1..5 min at noon (the last bucket, 12:00-12:01, ends now).
    expected = {i: float(i - 9) for i in range(10, 20)}
    expected.update({28: 1.0, 29: 2.0, 49: 59 / 60})
    expected.update({i: float(i - 54) for i in range(55, 60)})
    expected[60] = 5.0
    assert minutes == pytest.approx(expected)
    assert ages[9] == 0.0  # 11:10 exactly: due, age 0


def test_run_time_percentiles_per_kind_and_minute(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    script(store, clock)
    runtime = store.runtime_trend(trend_grid(HOUR, NOW))
    assert sorted(runtime) == ["export", "report"]
    export = {i: p for i, p in enumerate(runtime["export"]) if p is not None}
    assert sorted(export) == [42, 50]
    assert (export[42].runs, export[42].p50, export[42].p95) == (5, pytest.approx(3.0),
                                                                 pytest.approx(4.8))  # fmt: skip
    assert (export[50].runs, export[50].p50, export[50].p95) == (2, pytest.approx(3.0),
                                                                 pytest.approx(3.9))  # fmt: skip
    report = {i: p for i, p in enumerate(runtime["report"]) if p is not None}
    assert sorted(report) == [20, 30] and report[20].p50 == pytest.approx(30.0)


def test_trends_reads_the_three_charts_at_once(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    script(store, clock)
    grid = trend_grid(HOUR, NOW)
    trends = store.trends(HOUR, NOW)
    assert trends.grid == grid
    assert (trends.done, trends.failed) == store.throughput_trend(grid)
    assert trends.queue_age == store.queue_age_trend(grid)
    assert trends.runtime == store.runtime_trend(grid)
    # Thirty days: 6-hour buckets; the hour before noon falls in the one before the last.
    month = store.trends(30 * 86400, NOW)
    assert month.grid.step == 6 * 3600 and sum(month.failed) == 5 and month.failed[-2] == 5
    assert month.queue_age[-1] == 300.0


def test_an_empty_queue_draws_flat_lines(store: Store) -> None:
    trends = store.trends(HOUR)
    assert trends.grid.count == 61
    assert set(trends.done) == set(trends.failed) == {0}
    assert set(trends.queue_age) == {0.0} and trends.runtime == {}
