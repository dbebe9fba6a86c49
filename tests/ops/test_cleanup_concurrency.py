"""Cleanup of 200k done rows in chunks while a worker keeps claiming, on every backend."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from migrate_cron.store import Store, open_store
from tests.ops.helpers import bulk_done

ROWS = 200_000
BATCH = 1000


class Claimer(threading.Thread):
    """A worker stand-in: enqueue one job, claim it, complete it, again and again."""

    def __init__(self, store: Store) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.done = 0
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.store.enqueue("live")
                jobs = self.store.claim("claimer", 5, lease=60, kinds=["live"])
                self.done += self.store.complete("claimer", [j.id for j in jobs])
            except Exception as exc:  # reported; the test asserts there are none
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if len(self.errors) > 20:
                    return


def _wait_for(predicate: object, seconds: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.01)


@pytest.mark.slow
def test_cleanup_deletes_in_chunks_while_a_worker_keeps_claiming(
    store: Store, db_url: str, table_prefix: str
) -> None:
    old = datetime.now(UTC) - timedelta(days=30)
    bulk_done(store, ROWS, finished=old)
    recent = datetime.now(UTC) - timedelta(hours=1)
    bulk_done(store, 10, kind="recent", finished=recent)
    runs = store.tables.scheduled_runs
    with store.engine.begin() as conn:
        conn.execute(
            insert(runs),
            [
                {
                    "job_name": f"job{j}",
                    "scheduled_for": old + timedelta(minutes=i),
                    "enqueued_at": old + timedelta(minutes=i),
                    "outcome": "enqueued",
                }
                for j in range(3)
                for i in range(50)
            ],
        )

    claimer = Claimer(open_store(db_url, prefix=table_prefix))
    claimer.start()
    progress: list[tuple[str, int, int]] = []

    def on_progress(what: str, n: int) -> None:
        progress.append((what, n, claimer.done))
        if what == "done" and n == BATCH:
            # Between two chunks the cleanup holds no lock: the claimer finishes another job
            # before the next chunk starts (waiting for it here, not hoping for it by timing).
            seen = claimer.done
            _wait_for(lambda: claimer.done > seen or claimer.errors, 30)

    try:
        _wait_for(lambda: claimer.done > 0 or claimer.errors)
        result = store.cleanup(
            done_older_than=7 * 86400,
            failed_older_than=90 * 86400,
            batch=BATCH,
            on_progress=on_progress,
        )
    finally:
        claimer.stop.set()
        claimer.join(timeout=60)
        claimer.store.dispose()

    assert claimer.errors == []
    assert result.done == ROWS
    assert result.scheduled_runs == 3 * 49
    done_chunks = [p for p in progress if p[0] == "done"]
    assert [n for _, n, _ in done_chunks] == list(range(BATCH, ROWS + 1, BATCH))
    # The claimer finished jobs while the cleanup was between chunks (waited for above).
    assert done_chunks[-1][2] > done_chunks[0][2]
    job = store.tables.job
    with store.engine.connect() as conn:
        left = conn.execute(select(job.c.kind, job.c.state)).all()
        kept = conn.execute(select(runs.c.job_name, runs.c.scheduled_for)).all()
    assert {k for k, _ in left} <= {"recent", "live"}
    assert sum(1 for k, _ in left if k == "recent") == 10
    assert sorted(name for name, _ in kept) == ["job0", "job1", "job2"]
    assert {when for _, when in kept} == {old + timedelta(minutes=49)}
