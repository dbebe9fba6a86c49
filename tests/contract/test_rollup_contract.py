"""Contract cases for ``store/rollup.py`` and ``store/rolled.py``: the overview's long windows
from rolled-up periods, on every backend.

A scripted day and a half of history (runs of two kinds every 37 minutes, some failing, one
that waited two hours, a job running since 6:00, one waiting since 9:00, and runs in the last
quarter hour that no roll-up may take yet) must give the same done/failed and queue-age
series whether the charts read the history or the rolled periods; run-time percentiles from
the histograms stay within their stated resolution of the exact ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store
from migrate_cron.store.histogram import RESOLUTION
from migrate_cron.store.models import AttemptRun
from migrate_cron.store.rollup import MARGIN, MARK
from tests.ops.helpers import clocked_store

NOW = datetime(2026, 6, 1, 12, 3, 20, tzinfo=UTC)
DAY = 86400.0
WINDOWS = (DAY, 7 * DAY, 30 * DAY)


@pytest.fixture
def clocked(db_url: str, table_prefix: str) -> Iterator[tuple[Store, FakeClock]]:
    with clocked_store(db_url, table_prefix, NOW) as pair:
        yield pair


def run(store: Store, clock: FakeClock, kind: str, ready: datetime, start: datetime,
        seconds: float, *, ok: bool) -> None:  # fmt: skip
    clock.set(start)
    job_id = store.enqueue(kind, max_attempts=1, run_at=ready).job_id
    assert job_id is not None
    [claimed] = store.claim("w", 1, lease=30, kinds=[kind])
    assert claimed.id == job_id
    clock.set(start + timedelta(seconds=seconds))
    done = AttemptRun(start, start + timedelta(seconds=seconds), ready_at=ready)
    if ok:
        assert store.complete("w", [job_id], runs={job_id: done}) == 1
    else:
        assert store.fail("w", job_id, "boom", run=done) == "failed"


def script(store: Store, clock: FakeClock) -> None:
    first = NOW - timedelta(hours=36)
    for i in range(57):  # every 37 min until about 12 min before NOW
        start = first + timedelta(minutes=37 * i, seconds=i)
        wait = timedelta(seconds=(i * 53) % 400)
        seconds = 0.5 + (i * 7.3) % 300
        run(store, clock, f"k{i % 2}", start - wait, start, seconds, ok=i % 5 != 0)
    # Waited two hours, from 02:10 to 04:10.
    start = NOW.replace(hour=4, minute=10, second=0)
    run(store, clock, "k0", start - timedelta(hours=2), start, 12.0, ok=True)
    # Due 05:30, claimed 06:00, still running.
    clock.set(NOW.replace(hour=5, minute=30))
    store.enqueue("long", max_attempts=1)
    clock.set(NOW.replace(hour=6, minute=0))
    assert len(store.claim("w", 1, lease=30 * DAY, kinds=["long"])) == 1
    # Due 09:00 and still waiting.
    clock.set(NOW)
    store.enqueue("late", run_at=NOW.replace(hour=9, minute=0))
    # In the last quarter hour: not rolled yet.
    run(store, clock, "k1", NOW - timedelta(minutes=5), NOW - timedelta(minutes=4), 3.0, ok=False)
    clock.set(NOW)


def roll_all(store: Store, now: datetime = NOW) -> int:
    total = 0
    while (n := store.roll_up_trends(now)) > 0:
        total += n
    return total


def rows(store: Store) -> list[tuple[object, ...]]:
    t = store.tables.trend_periods
    with store.transaction(readonly=True) as conn:
        return [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]


def within(approx: float | None, exact: float | None) -> bool:
    if approx is None or exact is None:
        return approx is exact
    if exact < 0.01:
        return abs(approx - exact) <= 0.005
    return exact / RESOLUTION / 1.001 <= approx <= exact * RESOLUTION * 1.001


def test_rolled_and_live_draw_the_same_charts(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    script(store, clock)
    exact = {w: store.trends(w, NOW) for w in WINDOWS}
    assert not any(t.approximate for t in exact.values())
    assert roll_all(store) > 0
    for w in WINDOWS:
        rolled = store.trends(w, NOW)
        assert rolled.approximate and rolled.grid == exact[w].grid
        assert (rolled.done, rolled.failed) == (exact[w].done, exact[w].failed)
        if w == 30 * DAY:
            assert sum(rolled.done) == 46 and sum(rolled.failed) == 13
        assert rolled.queue_age == exact[w].queue_age
        assert sorted(rolled.runtime) == sorted(exact[w].runtime)
        for kind, points in rolled.runtime.items():
            for got, want in zip(points, exact[w].runtime[kind], strict=True):
                assert (got is None) == (want is None)
                if got is not None and want is not None:
                    assert got.runs == want.runs
                    assert within(got.p50, want.p50) and within(got.p95, want.p95)
    # The two-hour wait reads on the 24h chart: 2 h at the end of the bucket 04:00-04:10.
    day = store.trends(DAY, NOW)
    i = next(i for i in range(day.grid.count) if day.grid.bucket_end(i) == NOW.replace(
        hour=4, minute=10, second=0))  # fmt: skip
    assert day.queue_age[i] == 2 * 3600.0


def test_the_kinds_table_reads_rolled_periods_over_long_windows(
    clocked: tuple[Store, FakeClock],
) -> None:
    store, clock = clocked
    script(store, clock)
    roll_all(store)
    for w in WINDOWS:
        since = NOW - timedelta(seconds=w)
        exact = {k.kind: k for k in store.status(since, NOW).kinds}
        rolled_status = store.status(since, NOW, rolled=True)
        assert rolled_status.approximate
        rolled = {k.kind: k for k in rolled_status.kinds}
        assert sorted(rolled) == sorted(exact)
        for kind, want in exact.items():
            got = rolled[kind]
            assert (got.done, got.failed, got.ready, got.running) == (
                want.done, want.failed, want.ready, want.running)  # fmt: skip
            assert got.duration_max == pytest.approx(want.duration_max, abs=1e-3)
            assert within(got.duration_p50, want.duration_p50)
            assert within(got.duration_p95, want.duration_p95)
    # The last hour stays exact, even when asked for the rolled reading.
    hour = store.status(NOW - timedelta(hours=1), NOW, rolled=True)
    assert not hour.approximate
    assert not store.trends(3600.0, NOW).approximate


def test_a_period_is_rolled_only_once_its_margin_passed(
    clocked: tuple[Store, FakeClock],
) -> None:
    store, clock = clocked
    end = NOW.replace(minute=0, second=0)  # a ten-minute period 11:50-12:00
    run(store, clock, "k", end - timedelta(minutes=9), end - timedelta(minutes=5), 60.0, ok=True)
    t = store.tables.trend_periods

    def rolled_kinds() -> set[str]:
        with store.transaction(readonly=True) as conn:
            period = select(t.c.kind).where(
                t.c.span == 600, t.c.period_start == end - timedelta(minutes=10)
            )
            return {r.kind for r in conn.execute(period)}

    assert roll_all(store, end + timedelta(seconds=MARGIN - 1)) > 0
    assert rolled_kinds() == set()
    # 11:50-12:00, and the hour and the six hours that end with it.
    assert roll_all(store, end + timedelta(seconds=MARGIN)) == 3
    assert rolled_kinds() == {MARK, "k"}


def test_a_second_roll_up_changes_nothing(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    script(store, clock)
    roll_all(store)
    before = rows(store)
    assert store.roll_up_trends(NOW) == 0
    assert rows(store) == before
    # The same periods rolled again (two workers in one turn): the same rows.
    t = store.tables.trend_periods
    with store.transaction() as conn:
        conn.execute(
            t.delete().where(t.c.kind == MARK, t.c.period_start >= NOW - timedelta(hours=8))
        )
    assert roll_all(store) > 0
    assert rows(store) == before


def test_a_first_roll_up_is_bounded_per_turn(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    script(store, clock)
    # At most 6 ten-minute periods, and one period of each coarser span, per turn.
    assert store.roll_up_trends(NOW, max_periods=6) == 6 + 1 + 1
    exact = store.trends(DAY, NOW)  # rolled to 31 days ago only: the rest is read live
    assert roll_all(store) > 0
    rolled = store.trends(DAY, NOW)
    assert (exact.done, exact.failed, exact.queue_age) == (
        rolled.done, rolled.failed, rolled.queue_age)  # fmt: skip


def test_a_database_without_rolled_periods_reads_exactly(store: Store) -> None:
    assert store.roll_up_trends() >= 0
    empty = store.trends(7 * DAY)
    assert set(empty.done) == {0} and empty.runtime == {}
