"""The operator's store operations on every backend: retry and cancel in chunks, count_jobs,
and what a claiming worker sees afterwards."""

from __future__ import annotations

from migrate_cron.store import Store
from tests.ops.helpers import clocked_store


def _failed(store: Store, kind: str, n: int) -> list[int]:
    ids = [store.enqueue(kind, {"i": i}, max_attempts=1).job_id for i in range(n)]
    for job in store.claim("w", n, kinds=[kind]):
        assert store.fail("w", job.id, "boom") == "failed"
    return ids


def test_retry_all_failed_makes_them_claimable_with_attempts_reset(
    db_url: str, table_prefix: str
) -> None:
    with clocked_store(db_url, table_prefix) as (store, _clock):
        failed = _failed(store, "a", 5) + _failed(store, "b", 2)
        assert store.count_jobs(states=["failed"]) == 7
        assert store.retry(all_failed=True, states=("failed",), batch=2) == 7
        assert store.count_jobs(states=["failed"]) == 0
        for job_id in failed:
            job = store.get(job_id)
            assert job is not None
            assert (job.state, job.attempts) == ("open", 0)
        claimed = store.claim("w2", 100)
        assert sorted(j.id for j in claimed) == sorted(failed)


def test_retry_by_kind_touches_only_that_kind(db_url: str, table_prefix: str) -> None:
    with clocked_store(db_url, table_prefix) as (store, _clock):
        a = _failed(store, "a", 3)
        b = _failed(store, "b", 2)
        assert store.count_jobs(kind="a", states=["failed"]) == 3
        assert store.retry(kind="a", states=("failed",), batch=2) == 3
        assert {store.get(i).state for i in a} == {"open"}  # type: ignore[union-attr]
        assert {store.get(i).state for i in b} == {"failed"}  # type: ignore[union-attr]


def test_cancelled_jobs_are_never_claimed(db_url: str, table_prefix: str) -> None:
    with clocked_store(db_url, table_prefix) as (store, _clock):
        ids = [store.enqueue("k", {"i": i}).job_id for i in range(6)]
        cancel = ids[::2]
        assert store.count_jobs(cancel, states=["open", "running", "failed"]) == 3
        assert store.cancel(cancel, batch=2) == 3
        claimed = store.claim("w", 100)
        assert sorted(j.id for j in claimed) == ids[1::2]
        assert store.claim("w", 100) == []
        for job_id in cancel:
            job = store.get(job_id)
            assert job is not None
            assert (job.state, job.started_at) == ("cancelled", None)


def test_cancel_of_a_running_job_wins_over_its_late_completion(
    db_url: str, table_prefix: str
) -> None:
    with clocked_store(db_url, table_prefix) as (store, _clock):
        job_id = store.enqueue("k").job_id
        assert [j.id for j in store.claim("w", 1)] == [job_id]
        assert store.cancel([job_id]) == 1
        assert store.complete("w", [job_id]) == 0
        assert store.get(job_id).state == "cancelled"  # type: ignore[union-attr]


def test_retry_by_id_brings_back_cancelled_jobs_but_not_done_ones(
    db_url: str, table_prefix: str
) -> None:
    with clocked_store(db_url, table_prefix) as (store, _clock):
        cancelled = store.enqueue("k").job_id
        store.cancel([cancelled])
        done = store.enqueue("d").job_id
        [job] = store.claim("w", 1, kinds=["d"])
        store.complete("w", [job.id])
        assert store.retry([cancelled, done, 999]) == 1
        assert store.get(cancelled).state == "open"  # type: ignore[union-attr]
        assert store.get(done).state == "done"  # type: ignore[union-attr]
