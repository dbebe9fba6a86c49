"""Contract cases for ``store/history.py``: how the kind's job finished just before this one
ended (the ``recovered`` notification's question), on every backend."""

from __future__ import annotations

from migrate_cron.store import Store


def _finish(store: Store, kind: str, ok: bool) -> int:
    job_id = store.enqueue(kind, max_attempts=1).job_id
    [job] = store.claim("w", 1, lease=30, kinds=[kind])
    assert job.id == job_id
    if ok:
        store.complete("w", [job_id])
    else:
        store.fail("w", job_id, "exit code 1")
    return job_id


def test_previous_outcome_is_the_kind_job_that_finished_just_before(store: Store) -> None:
    first = _finish(store, "k", ok=True)
    assert store.previous_outcome(first).recorded and store.previous_outcome(first).state is None
    failed = _finish(store, "k", ok=False)
    _finish(store, "other", ok=True)  # another kind never counts
    assert store.previous_outcome(failed).state == "done"
    recovered = _finish(store, "k", ok=True)
    assert store.previous_outcome(recovered).state == "failed"
    after = _finish(store, "k", ok=True)
    assert store.previous_outcome(after).state == "done"
    # Asked later, the answer is the same: what came after does not count.
    assert store.previous_outcome(recovered).state == "failed"


def test_a_batch_finished_in_one_instant_is_ordered_by_id(store: Store) -> None:
    _finish(store, "k", ok=False)
    ids = [store.enqueue("k").job_id for _ in range(3)]
    store.claim("w", 3, lease=30, kinds=["k"])
    store.complete("w", ids)  # one statement, one finished_at
    states = [store.previous_outcome(i).state for i in ids]
    assert states == ["failed", "done", "done"]  # exactly one recovered


def test_an_unrecorded_outcome_says_so(store: Store) -> None:
    open_id = store.enqueue("k").job_id
    assert not store.previous_outcome(open_id).recorded
    assert not store.previous_outcome(10_000_000).recorded
    store.claim("w", 1, lease=30, kinds=["k"])
    assert not store.previous_outcome(open_id).recorded  # running
    cancelled = store.enqueue("k").job_id
    store.cancel([cancelled])
    assert not store.previous_outcome(cancelled).recorded
