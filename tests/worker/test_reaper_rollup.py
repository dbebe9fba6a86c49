"""The reaper turn rolls up the console's trend periods (``store/rollup.py``): the worker that
holds the turn rolls, a bounded stretch per turn; one that does not hold it rolls nothing.

SQLite in a temporary file: the roll-up itself runs on every backend in
``tests/contract/test_rollup_contract.py``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from migrate_cron.store import Store, open_store
from migrate_cron.store.models import AttemptRun
from migrate_cron.store.rollup import MARK
from migrate_cron.worker.heartbeat import Reaper
from migrate_cron.worker.log import WorkerLog


@pytest.fixture
def local_store(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path / 'queue.db'}")
    store.create_schema()
    try:
        yield store
    finally:
        store.dispose()


def rolled(store: Store, kind: str) -> int:
    """Rows of ``kind`` in ``job_trend_periods`` (markers: kind '')."""
    t = store.tables.trend_periods
    with store.transaction(readonly=True) as conn:
        return int(conn.execute(select(func.count()).where(t.c.kind == kind)).scalar_one())


def test_the_reaper_turn_rolls_up_the_history(local_store: Store) -> None:
    store = local_store
    job_id = store.enqueue("k").job_id
    assert job_id is not None
    store.claim("w1", 1, lease=30)
    start = store.db_now() - timedelta(hours=1)
    run = AttemptRun(start, start + timedelta(seconds=5), ready_at=start)
    assert store.complete("w1", [job_id], runs={job_id: run}) == 1

    def reaper(name: str) -> Reaper:
        return Reaper(store, name, WorkerLog(io.StringIO(), delay=0), interval=60.0)

    holder, other = reaper("w1"), reaper("w2")
    holder.reap()  # takes the turn; the first stretch of the 31 days it starts from
    marks = rolled(store, MARK)
    assert marks > 0 and rolled(store, "k") == 0
    other.reap()  # the turn is w1's: nothing rolled
    assert rolled(store, MARK) == marks
    for _ in range(40):
        holder.reap()
    # The hour-old run, in its 10-minute period (and its hour and 6 hours once they closed).
    assert rolled(store, "k") in (1, 2, 3)
    t = store.tables.trend_periods
    with store.transaction(readonly=True) as conn:
        ten = select(t.c.done, t.c.done_max).where(t.c.kind == "k", t.c.span == 600)
        assert conn.execute(ten).one() == (1, pytest.approx(5.0))
