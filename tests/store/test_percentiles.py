"""Status's exact percentiles without window functions (``store/percentiles.py``) against
``percentile_cont`` computed here, on every backend: ranks that fall on a bucket's edge or
inside it, duplicates, one and two runs, a bucket holding every run, run times below zero.

Run times are whole milliseconds: SQLite's ``julianday`` reads no finer."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, insert, select

from migrate_cron.store import Store
from migrate_cron.store.percentiles import PERCENTILES, ExactPercentiles, needed_ranks
from migrate_cron.store.run_times import RunTimes
from tests.conftest import fresh_store

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
SINCE = NOW - timedelta(hours=1)


def percentile_cont(values: Sequence[float], p: float) -> float:
    """The definition (PostgreSQL's): linear between the 0-based ranks around p·(n−1)."""
    ordered = sorted(values)
    h = p * (len(ordered) - 1)
    lo, hi = math.floor(h), math.ceil(h)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def _spread(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(1, 3_600_000) for _ in range(n)]


#: Per kind, run times in milliseconds.
CASES: dict[str, list[int]] = {
    "one": [1234],
    "two": [1000, 3001],
    "same": [2500] * 57,
    "dups": [5, 5, 5, 7, 7, 900, 900, 900, 900, 40_000],
    "zero": [0, 0, 1, 2],
    # Every run in one bucket (1 % wide), all distinct: the ranks are read from inside it.
    "narrow": [100_000 + i for i in range(0, 997, 3)],
    "many": _spread(2_001, 1),
    "hundred": _spread(100, 2),
    "hundred-one": _spread(101, 3),
    "below-zero": [-3000, -5, 0, 4, 2000, 2999, -1],
}


@pytest.fixture
def filled(db_url: str, table_prefix: str) -> Iterator[Store]:
    with fresh_store(db_url, table_prefix) as store:
        rows = [
            {
                "job_id": i,
                "kind": kind,
                "attempt": 1,
                "worker": "w",
                "started_at": NOW - timedelta(minutes=5, milliseconds=ms),
                "finished_at": NOW - timedelta(minutes=5),
                "outcome": "done",
            }
            for kind, times in CASES.items()
            for i, ms in enumerate(times)
        ]
        # Outside the window, or not successful: never counted.
        rows.append({**rows[0], "job_id": -1, "finished_at": SINCE - timedelta(seconds=1)})
        rows.append({**rows[0], "job_id": -2, "outcome": "failed"})
        with store.engine.begin() as conn:
            conn.execute(insert(store.tables.attempts), rows)
        yield store


def _expected(times: list[int]) -> tuple[int, float, float, float]:
    seconds = [ms / 1000 for ms in times]
    return (
        len(seconds),
        percentile_cont(seconds, PERCENTILES[0]),
        percentile_cont(seconds, PERCENTILES[1]),
        max(seconds),
    )


def test_histogram_path_gives_percentile_cont_on_every_backend(filled: Store) -> None:
    job, window = RunTimes(filled).window(SINCE, runs=True)
    ticks = filled.duration_ticks(job.c.started_at, job.c.finished_at)
    with filled.transaction(readonly=True) as conn:
        got = ExactPercentiles(job, window, *ticks).read(conn)
    assert sorted(got) == sorted(CASES)
    for kind, times in CASES.items():
        assert got[kind] == pytest.approx(_expected(times), rel=1e-12, abs=1e-9), kind


def test_status_reports_the_same_percentiles_on_every_backend(filled: Store) -> None:
    """Whatever path the backend takes (native, histogram, ranking), the same numbers."""
    by_kind = {k.kind: k for k in filled.status(SINCE, NOW).kinds}
    for kind, times in CASES.items():
        _, p50, p95, top = _expected(times)
        k = by_kind[kind]
        got = (k.duration_p50, k.duration_p95, k.duration_max)
        assert got == pytest.approx((p50, p95, top), rel=1e-12, abs=1e-9), kind
        assert k.done == 0  # no job rows: the done count is the job rows'


@pytest.mark.parametrize("n", [1, 2, 3, 4, 20, 21, 100, 101, 1000])
def test_needed_ranks_are_those_around_p_times_n_minus_1(n: int) -> None:
    for p in PERCENTILES:
        h = p * (n - 1)
        assert needed_ranks(n, p) == (math.floor(h + 1e-9) + 1, math.ceil(h - 1e-9) + 1)


def test_one_snapshot_keeps_the_second_pass_on_the_rows_of_the_first(
    mariadb_database: str, table_prefix: str
) -> None:
    """MySQL/MariaDB connections read committed: without ``one_snapshot`` a run finished
    between the histogram and the bucket rows would shift every rank after it."""
    with fresh_store(mariadb_database, table_prefix) as store:
        att = store.tables.attempts
        row = {"kind": "k", "attempt": 1, "worker": "w", "outcome": "done"}
        row |= {"started_at": NOW - timedelta(seconds=2), "finished_at": NOW}
        with store.engine.begin() as conn:
            conn.execute(insert(att), {**row, "job_id": 1})
        count = select(func.count()).select_from(att)
        with store.transaction(readonly=True) as conn:
            store.one_snapshot(conn)
            assert conn.execute(count).scalar() == 1
            with store.engine.begin() as other:
                other.execute(insert(att), {**row, "job_id": 2})
            assert conn.execute(count).scalar() == 1
        with store.transaction(readonly=True) as conn:  # the next one reads committed again
            assert conn.execute(count).scalar() == 2
            with store.engine.begin() as other:
                other.execute(insert(att), {**row, "job_id": 3})
            assert conn.execute(count).scalar() == 3
