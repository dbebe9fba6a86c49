"""Contract cases for pauses, concurrency-limited claims and ``overlap = "skip"`` slots, on
every backend."""

from __future__ import annotations

from datetime import UTC, datetime

from migrate_cron.store import Store
from migrate_cron.store.leases import SCHEDULER_PAUSE


def test_pause_resume_and_claims_skip_paused_kinds(store: Store) -> None:
    assert store.pause(["a", SCHEDULER_PAUSE], "me") == ["a", SCHEDULER_PAUSE]
    assert store.pause(["a"], "me") == []
    assert store.paused() == {"a": "me", SCHEDULER_PAUSE: "me"}
    a = store.enqueue("a").job_id
    b = store.enqueue("b").job_id
    assert [j.id for j in store.claim("w", 5, kinds=None, exclude=["a"])] == [b]
    assert store.claim("w", 5, kinds=["a"], exclude=["a"]) == []
    assert store.resume(["a", "never"]) == ["a"]
    assert set(store.paused()) == {SCHEDULER_PAUSE}
    assert [j.id for j in store.claim("w", 5, kinds=["a"])] == [a]


def test_a_limited_kind_never_runs_more_than_its_limit(store: Store) -> None:
    ids = [store.enqueue("limited").job_id for _ in range(5)]
    free = store.enqueue("free").job_id
    first = store.claim("w1", 10, kinds=None, limits={"limited": 2})
    assert sorted(j.id for j in first) == sorted([*ids[:2], free])
    assert store.claim("w2", 10, kinds=["limited"], limits={"limited": 2}) == []
    store.complete("w1", [ids[0]])
    (next_one,) = store.claim("w2", 10, kinds=["limited"], limits={"limited": 2})
    assert next_one.id == ids[2]


def test_overlap_skip_records_the_slot_while_a_run_runs(store: Store) -> None:
    slot = datetime(2026, 12, 3, 2, 30, tzinfo=UTC)
    first = store.enqueue_run("job", slot)
    store.claim("w", 1, kinds=["job"])
    later = store.enqueue_run("job", slot.replace(hour=3), skip_if_running=True)
    assert (later.created, later.outcome, later.job_id) == (True, "skipped", None)
    store.complete("w", [first.job_id])
    again = store.enqueue_run("job", slot.replace(hour=4), skip_if_running=True)
    assert (again.created, again.outcome) == (True, "enqueued")
