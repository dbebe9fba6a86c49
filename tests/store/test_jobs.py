"""``store/jobs.py``: what the worker's outcomes write on each database."""

from __future__ import annotations

import time

from sqlalchemy import select

from migrate_cron.store import Store


def test_each_batch_of_successes_writes_its_own_time(store: Store) -> None:
    """``complete``'s UPDATE is built once per store. On SQLite "now" was a value bound when it
    was built, so every job this worker finished got the first batch's time — before its
    own start. Each job's ``finished_at`` is its own batch's, never before it started."""
    store.enqueue_many("k", [None, None, None])
    for _ in range(3):
        [job] = store.claim("w", 1)
        time.sleep(0.01)  # the next claim's clock reading is later than this finish
        assert store.complete("w", [job.id], attempts={job.id: job.attempts}) == 1
    table = store.tables.job
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(table.c.id, table.c.started_at, table.c.finished_at).order_by(table.c.id)
        ).all()
    assert len(rows) == 3
    for _, started, finished in rows:
        assert finished >= started
    finishes = [finished for _, _, finished in rows]
    assert finishes == sorted(finishes) and len(set(finishes)) == 3
