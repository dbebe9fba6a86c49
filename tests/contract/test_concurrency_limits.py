"""Per-kind concurrency limits (``claim(limits=…)``) and ``overlap = "skip"`` slots, on every
backend: the limit holds under concurrent claimers, a dead worker's place comes back with the
reaper, and kinds without a limit are claimed as before."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store, open_store
from migrate_cron.store.claim import kind_lock_name

LIMITS = {"solo": 1, "pair": 2}


def test_claim_takes_at_most_the_free_places_of_a_limited_kind(store: Store) -> None:
    for i in range(5):
        store.enqueue("solo", {"i": i})
    for i in range(3):
        store.enqueue("pair", {"i": i})
    for i in range(4):
        store.enqueue("free", {"i": i})
    first = store.claim("w1", 10, lease=30, limits=LIMITS)
    assert Counter(j.kind for j in first) == {"solo": 1, "pair": 2, "free": 4}
    assert store.claim("w2", 10, lease=30, limits=LIMITS) == []
    [solo] = [j for j in first if j.kind == "solo"]
    store.complete("w1", [solo.id])
    [again] = store.claim("w2", 10, lease=30, limits=LIMITS)
    assert again.kind == "solo" and again.id != solo.id
    assert store.claim("w3", 10, lease=30, limits=LIMITS) == []


def test_rows_over_the_limit_give_their_room_to_other_kinds(store: Store) -> None:
    """Five solo jobs at the head of the queue, three others behind: a claim of four gets one
    solo and the three others (the extra solo rows do not block the queue)."""
    solo = [store.enqueue("solo", {"i": i}).job_id for i in range(5)]
    for _ in range(3):
        store.enqueue("free")
    claimed = store.claim("w", 4, lease=30, limits=LIMITS)
    assert Counter(j.kind for j in claimed) == {"solo": 1, "free": 3}
    assert [j.id for j in claimed if j.kind == "solo"] == [solo[0]]
    for job_id in solo[1:]:  # given back untouched: open, no attempt counted
        job = store.get(job_id)
        assert job is not None and job.state == "open" and job.attempts == 0
        assert job.locked_by is None and job.started_at is None
    store.enqueue("free")
    only_free = store.claim("w", 10, lease=30, kinds=["free"], limits=LIMITS)
    assert [j.kind for j in only_free] == ["free"]
    assert store.claim("w", 10, lease=30, kinds=["solo"], limits=LIMITS) == []
    assert store.claim("w", 10, lease=30, limits=LIMITS) == []


def test_a_dead_workers_place_is_freed_by_the_reaper_not_before(
    db_url: str, table_prefix: str
) -> None:
    clock = FakeClock(datetime(2026, 4, 1, tzinfo=UTC))
    s = open_store(db_url, prefix=table_prefix, clock=clock)
    s.create_schema()
    try:
        s.enqueue("solo", ref="a")
        s.enqueue("solo", ref="b")
        [dead] = s.claim("dead", 5, lease=30, limits=LIMITS)
        clock.advance(60)  # its lease has expired, but it is still 'running'
        assert s.claim("alive", 5, lease=30, limits=LIMITS) == []
        assert s.reap().reopened == 1
        claimed = s.claim("alive", 5, lease=30, limits=LIMITS)
        assert len(claimed) == 1 and claimed[0].kind == "solo"
        assert s.get(dead.id) is not None
    finally:
        s.drop_schema()
        s.dispose()


def test_the_kind_lock_row_fits_any_kind_name(store: Store) -> None:
    long_kind = "k" * 200
    assert len(kind_lock_name(long_kind)) <= 200
    assert kind_lock_name("solo") == "concurrency:solo"
    store.enqueue(long_kind)
    store.enqueue(long_kind)
    assert len(store.claim("w", 5, lease=30, limits={long_kind: 1})) == 1


def test_concurrent_claimers_never_exceed_the_limit(store: Store) -> None:
    """Eight threads (each its own connection) claim, hold briefly and complete 40 jobs of a
    kind limited to 2; the database's count of running jobs is sampled throughout."""
    for i in range(40):
        store.enqueue("pair", {"i": i})
    done: list[int] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    peak = [0]

    def claimer(name: str) -> None:
        try:
            while not stop.is_set() and len(done) < 40:
                jobs = store.claim(name, 4, lease=30, limits=LIMITS)
                if not jobs:
                    time.sleep(0.005)
                    continue
                time.sleep(0.01)
                store.complete(name, [j.id for j in jobs])
                done.extend(j.id for j in jobs)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def sampler() -> None:
        while not stop.is_set():
            running = len(store.list_jobs(state="running", kind="pair"))
            peak[0] = max(peak[0], running)
            time.sleep(0.002)

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(8)]
    watch = threading.Thread(target=sampler)
    watch.start()
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stop.set()
    watch.join(10)
    assert errors == []
    assert sorted(done) == sorted(j.id for j in store.list_jobs(kind="pair"))
    assert 1 <= peak[0] <= 2


def test_overlap_skip_records_a_slot_due_while_a_run_runs(db_url: str, table_prefix: str) -> None:
    clock = FakeClock(datetime(2026, 4, 1, tzinfo=UTC))
    s = open_store(db_url, prefix=table_prefix, clock=clock)
    s.create_schema()
    try:
        t0 = datetime(2026, 4, 1, tzinfo=UTC)
        first = s.enqueue_run("long", t0, skip_if_running=True)
        assert first.created and first.outcome == "enqueued"
        [running] = s.claim("w", 1, lease=120)
        second = s.enqueue_run("long", t0 + timedelta(minutes=1), skip_if_running=True)
        assert second.created and second.outcome == "skipped" and second.job_id is None
        waiting = s.enqueue_run("long", t0 + timedelta(minutes=2))  # overlap = wait
        assert waiting.outcome == "enqueued"
        batch = s.enqueue_runs(
            [("long", t0 + timedelta(minutes=3), 5), ("other", t0 + timedelta(minutes=3), 5)],
            skip_running={"long", "other"},
        )
        assert [r.outcome for r in batch] == ["skipped", "enqueued"]
        clock.advance(300)  # the lease expired (a dead worker): the next slot runs
        later = s.enqueue_run("long", t0 + timedelta(minutes=5), skip_if_running=True)
        assert later.outcome == "enqueued"
        s.complete("w", [running.id])
        outcomes = {r["scheduled_for"]: r["outcome"] for r in s.runs("long")}
        assert sorted(outcomes.values()) == [
            "enqueued",
            "enqueued",
            "enqueued",
            "skipped",
            "skipped",
        ]
    finally:
        s.drop_schema()
        s.dispose()
