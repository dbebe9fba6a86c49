"""The Store contract, run against every backend (SQLite, PostgreSQL, MariaDB).

Each test states one guarantee the worker, scheduler and operators rely on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from migrate_cron.clock import FakeClock
from migrate_cron.errors import SchemaMissing
from migrate_cron.store import Store, open_store


def test_enqueue_dedupes_on_kind_and_ref(store: Store) -> None:
    first = store.enqueue("export", {"order": 1}, ref="order-1")
    second = store.enqueue("export", {"order": 1}, ref="order-1")
    other_kind = store.enqueue("mail", None, ref="order-1")
    assert first.created and not second.created
    assert second.job_id == first.job_id
    assert other_kind.created and other_kind.job_id != first.job_id
    assert len(store.list_jobs()) == 2


def test_enqueue_without_ref_never_dedupes(store: Store) -> None:
    ids = {store.enqueue("poll").job_id for _ in range(3)}
    assert len(ids) == 3


def test_payload_round_trips_verbatim(store: Store) -> None:
    payload = {"name": "O'Brien; DROP TABLE job; --", "list": [1, 2.5, None], "u": "ümlaut %s"}
    job_id = store.enqueue("k'ind", payload, ref="r\"ef'").job_id
    job = store.get(job_id)
    assert job is not None
    assert job.payload == payload and job.kind == "k'ind" and job.ref == "r\"ef'"


def test_rolled_back_caller_transaction_leaves_no_job(store: Store) -> None:
    with store.engine.connect() as conn:
        trans = conn.begin()
        store.enqueue("export", {"x": 1}, conn=conn)
        trans.rollback()
    assert store.list_jobs() == []
    with store.engine.begin() as conn:
        store.enqueue("export", {"x": 2}, conn=conn)
    jobs = store.list_jobs()
    assert [j.payload for j in jobs] == [{"x": 2}]


def test_claim_takes_ready_jobs_in_run_at_order_once(store: Store) -> None:
    now = store.db_now()
    late = store.enqueue("k", run_at=now - timedelta(seconds=10)).job_id
    early = store.enqueue("k", run_at=now - timedelta(seconds=20)).job_id
    future = store.enqueue("k", run_at=now + timedelta(hours=1)).job_id
    claimed = store.claim("w1", n=10, lease=30)
    assert [j.id for j in claimed] == [early, late]
    for job in claimed:
        assert job.state == "running" and job.attempts == 1 and job.locked_by == "w1"
        assert job.locked_until is not None and job.started_at is not None
        assert job.locked_until > job.started_at
    assert store.claim("w2", n=10, lease=30) == []
    assert store.get(future).state == "open"  # type: ignore[union-attr]


def test_claim_filters_by_kind(store: Store) -> None:
    store.enqueue("a")
    b = store.enqueue("b").job_id
    claimed = store.claim("w", n=10, lease=30, kinds=["b"])
    assert [j.id for j in claimed] == [b]


def test_complete_is_fenced_by_owner(store: Store) -> None:
    job_id = store.enqueue("k").job_id
    [job] = store.claim("w1", 1, lease=30)
    assert store.complete("intruder", [job_id]) == 0
    assert store.get(job_id).state == "running"  # type: ignore[union-attr]
    assert store.complete("w1", [job_id], outputs={job_id: "ok\n"}) == 1
    done = store.get(job_id)
    assert done is not None and done.state == "done" and done.output == "ok\n"
    assert done.finished_at is not None and job.started_at is not None
    # A second (late, duplicate) complete changes nothing.
    assert store.complete("w1", [job_id]) == 0


def test_worker_that_lost_its_lease_cannot_finish(store: Store) -> None:
    job_id = store.enqueue("k", max_attempts=3).job_id
    store.claim("w1", 1, lease=0.01)
    _wait_expired(store, job_id)
    assert store.reap().reopened == 1
    [again] = store.claim("w2", 1, lease=30)
    assert again.id == job_id and again.attempts == 2
    # The first worker wakes up late: complete, fail, heartbeat and release all change nothing.
    assert store.complete("w1", [job_id]) == 0
    assert store.fail("w1", job_id, "late failure") is None
    assert store.heartbeat("w1", [job_id], 30) == 0
    assert store.release("w1", [job_id]) == 0
    row = store.get(job_id)
    assert row is not None and row.state == "running" and row.locked_by == "w2"
    assert store.complete("w2", [job_id]) == 1


def test_fail_retries_with_delay_then_shelves(store: Store) -> None:
    job_id = store.enqueue("k", max_attempts=2).job_id
    store.claim("w", 1, lease=30)
    assert store.fail("w", job_id, "exit 1", retry_in=3600, output="boom") == "open"
    row = store.get(job_id)
    assert row is not None and row.state == "open" and row.last_error == "exit 1"
    assert row.run_at > store.db_now() + timedelta(seconds=3500)
    assert store.claim("w", 1, lease=30) == []  # not before its run_at
    store.retry([job_id], states=("open",))  # operator says: now
    [job] = store.claim("w", 1, lease=30)
    assert job.attempts == 1  # retry resets attempts
    assert store.fail("w", job_id, "exit 2", retry_in=0) == "open"
    [job] = store.claim("w", 1, lease=30)
    assert job.attempts == 2
    assert store.fail("w", job_id, "exit 3: final", output="tail") == "failed"
    row = store.get(job_id)
    assert row is not None and row.state == "failed" and row.last_error == "exit 3: final"
    assert row.output == "tail" and row.finished_at is not None


def test_terminal_fail_skips_remaining_attempts(store: Store) -> None:
    job_id = store.enqueue("unknown-kind", max_attempts=5).job_id
    store.claim("w", 1, lease=30)
    assert store.fail("w", job_id, "kind not in registry", terminal=True) == "failed"


def test_heartbeat_extends_only_own_leases(store: Store) -> None:
    a = store.enqueue("k").job_id
    b = store.enqueue("k").job_id
    store.claim("w1", 1, lease=5)
    store.claim("w2", 1, lease=5)
    before = store.get(a).locked_until  # type: ignore[union-attr]
    assert store.heartbeat("w1", [a, b], lease=600) == 1
    after = store.get(a)
    assert after is not None and after.locked_until is not None and before is not None
    assert after.locked_until > before + timedelta(seconds=500)
    assert store.get(b).locked_until < after.locked_until  # type: ignore[union-attr,operator]


def test_release_returns_job_without_counting_the_attempt(store: Store) -> None:
    job_id = store.enqueue("k").job_id
    store.claim("w", 1, lease=30)
    assert store.release("w", [job_id]) == 1
    row = store.get(job_id)
    assert row is not None and row.state == "open" and row.attempts == 0
    assert row.locked_by is None
    [job] = store.claim("w2", 1, lease=30)
    assert job.id == job_id and job.attempts == 1


def test_reap_reopens_or_fails_expired_leases(store: Store) -> None:
    retryable = store.enqueue("k", max_attempts=3).job_id
    spent = store.enqueue("k", max_attempts=1).job_id
    healthy = store.enqueue("k", max_attempts=1).job_id
    store.claim("dead", 2, lease=0.01)
    store.claim("alive", 1, lease=600)
    _wait_expired(store, retryable)
    result = store.reap()
    assert (result.reopened, result.failed) == (1, 1)
    states = {j.id: j.state for j in store.list_jobs()}
    assert states == {retryable: "open", spent: "failed", healthy: "running"}
    assert "lease expired" in (store.get(spent).last_error or "")  # type: ignore[union-attr]
    assert store.reap() == type(result)(0, 0)


def test_retry_and_cancel(store: Store) -> None:
    ids = [store.enqueue("k", max_attempts=1).job_id for _ in range(5)]
    for job in store.claim("w", 5, lease=30):
        store.fail("w", job.id, "boom")
    assert {j.state for j in store.list_jobs()} == {"failed"}
    assert store.retry(ids[:2]) == 2
    assert store.retry(kind="other") == 0
    assert store.retry(all_failed=True, batch=2) == 3
    assert {j.state for j in store.list_jobs()} == {"open"}
    assert all(j.attempts == 0 for j in store.list_jobs())
    assert store.cancel(ids[:3]) == 3
    claimed = store.claim("w", 10, lease=30)
    assert sorted(j.id for j in claimed) == sorted(ids[3:])


def test_cleanup_deletes_old_finished_jobs_in_chunks(db_url: str, table_prefix: str) -> None:
    clock = FakeClock(datetime(2026, 3, 1, tzinfo=UTC))
    s = open_store(db_url, prefix=table_prefix, clock=clock)
    s.create_schema()
    try:
        for i in range(7):
            s.enqueue("k", ref=str(i))
        for job in s.claim("w", 7, lease=30):
            s.complete("w", [job.id])
        for hour in range(3):
            s.enqueue_run("nightly", datetime(2026, 2, 1, hour, tzinfo=UTC))
        clock.advance(8 * 86400)
        fresh = s.enqueue("k", ref="fresh").job_id
        s.claim("w", 1, lease=30)
        s.complete("w", [fresh])
        progress: list[int] = []
        result = s.cleanup(
            done_older_than=7 * 86400, batch=3, on_progress=lambda _state, n: progress.append(n)
        )
        # The nightly runs' jobs are still open: only the 7 old done jobs go.
        assert result.done == 7
        assert progress[:3] == [3, 6, 7]
        remaining = s.runs("nightly")
        assert [r["scheduled_for"] for r in remaining] == [datetime(2026, 2, 1, 2, tzinfo=UTC)]
        assert result.scheduled_runs == 2
        assert s.get(fresh) is not None
    finally:
        s.drop_schema()
        s.dispose()


def test_enqueue_run_once_per_slot_and_skipped_slots_recorded(store: Store) -> None:
    slot = datetime(2026, 5, 1, 2, 30, tzinfo=UTC)
    first = store.enqueue_run("invoices", slot, payload={"a": 1}, max_attempts=3)
    second = store.enqueue_run("invoices", slot)
    assert first.created and first.job_id is not None and first.outcome == "enqueued"
    assert not second.created and second.job_id == first.job_id
    job = store.get(first.job_id)
    assert job is not None and job.kind == "invoices" and job.scheduled_for == slot
    assert job.max_attempts == 3 and job.payload == {"a": 1}
    skipped = store.enqueue_run("invoices", slot + timedelta(days=1), outcome="skipped")
    assert skipped.created and skipped.job_id is None
    again = store.enqueue_run("invoices", slot + timedelta(days=1))
    assert not again.created and again.outcome == "skipped"
    assert len(store.list_jobs()) == 1
    assert store.last_run("invoices") == slot + timedelta(days=1)
    assert store.last_run("never") is None


def test_stats_counts_per_kind_and_oldest_ready_age(db_url: str, table_prefix: str) -> None:
    clock = FakeClock(datetime(2026, 6, 1, 12, tzinfo=UTC))
    s = open_store(db_url, prefix=table_prefix, clock=clock)
    s.create_schema()
    try:
        s.enqueue("a")
        clock.advance(30)
        s.enqueue("a")
        s.enqueue("a", delay=600)
        s.enqueue("b", max_attempts=1)
        [b] = s.claim("w", 1, lease=30, kinds=["b"])
        s.fail("w", b.id, "x")
        clock.advance(15)
        now = clock.now()
        by_kind = {k.kind: k for k in s.status(since=now - timedelta(days=1)).kinds}
        assert by_kind["a"].ready == 2 and by_kind["a"].scheduled == 1
        oldest = by_kind["a"].oldest_ready_at
        assert oldest is not None and (now - oldest).total_seconds() == pytest.approx(45.0)
        assert by_kind["b"].failed == 1 and by_kind["b"].ready == 0
    finally:
        s.drop_schema()
        s.dispose()


def test_named_lease_has_one_holder_until_it_expires(store: Store) -> None:
    assert store.acquire_lease("scheduler", "a", ttl=30)
    assert not store.acquire_lease("scheduler", "b", ttl=30)
    assert store.acquire_lease("scheduler", "a", ttl=30)  # renew
    assert store.lease_holder("scheduler")[0] == "a"  # type: ignore[index]
    assert store.release_lease("scheduler", "a")
    assert store.acquire_lease("scheduler", "b", ttl=0.01)
    deadline = datetime.now(UTC) + timedelta(seconds=5)
    while not store.acquire_lease("scheduler", "c", ttl=30):
        assert datetime.now(UTC) < deadline, "expired lease was never taken over"
    assert store.lease_holder("scheduler")[0] == "c"  # type: ignore[index]


def test_missing_tables_give_an_actionable_error(db_url: str, table_prefix: str) -> None:
    s = open_store(db_url, prefix=table_prefix + "none_")
    with pytest.raises(SchemaMissing, match="db upgrade"):
        s.enqueue("k")
    s.dispose()


def test_timestamps_keep_microseconds(store: Store) -> None:
    when = datetime(2026, 7, 1, 8, 0, 0, 123456, tzinfo=UTC)
    job_id = store.enqueue("k", run_at=when).job_id
    assert store.get(job_id).run_at == when  # type: ignore[union-attr]


def test_state_check_constraint_rejects_unknown_states(store: Store) -> None:
    from sqlalchemy.exc import IntegrityError, OperationalError

    job_id = store.enqueue("k").job_id
    table = store.tables.job.name
    with pytest.raises((IntegrityError, OperationalError)), store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {table} SET state = 'lost' WHERE id = :id"), {"id": job_id})


def _wait_expired(store: Store, job_id: int, timeout: float = 5.0) -> None:
    """Poll until the job's lease is in the past on the database's clock."""
    deadline = datetime.now(UTC) + timedelta(seconds=timeout)
    while True:
        job = store.get(job_id)
        assert job is not None and job.locked_until is not None
        if job.locked_until < store.db_now():
            return
        assert datetime.now(UTC) < deadline, "lease did not expire in time"


def test_enqueue_many_adds_one_ready_job_per_payload(store: Store) -> None:
    assert store.enqueue_many("bulk", [{"n": i} for i in range(2500)], chunk=1000) == 2500
    assert store.count_jobs(kind="bulk", states=["open"]) == 2500
    claimed = store.claim("w", 3000, lease=30, kinds=["bulk"])
    assert sorted(j.payload["n"] for j in claimed) == list(range(2500))


def test_count_jobs_filters_by_ids_kind_and_state(store: Store) -> None:
    a = store.enqueue("a").job_id
    b = store.enqueue("a").job_id
    store.enqueue("b")
    [claimed] = store.claim("w", 1, lease=30, kinds=["b"])
    assert store.count_jobs() == 3
    assert store.count_jobs(kind="a") == 2
    assert store.count_jobs([a, b, claimed.id], states=["open"]) == 2
    assert store.count_jobs(states=["running"]) == 1
    assert store.count_jobs([]) == 0


def test_owned_jobs_lists_only_own_running_leases(store: Store) -> None:
    for _ in range(3):
        store.enqueue("o")
    mine = store.claim("me", 2, lease=30)
    [theirs] = store.claim("them", 1, lease=30)
    ids = [j.id for j in mine] + [theirs.id]
    assert sorted(store.owned_jobs("me", ids)) == sorted(j.id for j in mine)
    store.complete("me", [mine[0].id])
    assert store.owned_jobs("me", ids) == [mine[1].id]
    assert store.owned_jobs("me", []) == []


def test_enqueue_runs_writes_each_slot_once_in_request_order(store: Store) -> None:
    t = datetime(2026, 3, 1, 12, tzinfo=UTC)
    requests = [("b", t, 3), ("a", t, 3), ("a", t + timedelta(minutes=1), 2)]
    first = store.enqueue_runs(requests, batch=2)
    assert [r.created for r in first] == [True, True, True]
    again = store.enqueue_runs(requests)
    assert [r.created for r in again] == [False, False, False]
    assert [r.job_id for r in again] == [r.job_id for r in first]
    assert store.last_runs(["a", "b", "never"]) == {
        "a": store.last_run("a"),
        "b": store.last_run("b"),
    }
    newest = store.last_run("a")
    assert newest is not None and newest.replace(tzinfo=UTC) == t + timedelta(minutes=1)


def test_enqueue_runs_in_bulk_matches_slot_by_slot(store: Store) -> None:
    """A chunk mixing new slots, a slot already recorded, a repeat and an overlap skip gives
    what ``enqueue_run`` one by one gives: the same jobs, rows and results."""
    t = datetime(2026, 3, 1, 12, tzinfo=UTC)
    earlier = store.enqueue_run("a", t)
    busy = store.enqueue("long").job_id
    store.claim("w", 1, lease=60, kinds=["long"])
    requests = [
        ("a", t, 3),  # recorded before
        ("a", t + timedelta(minutes=1), 4),
        ("long", t, 3),  # skipped: a run of its kind holds a live lease
        ("b", t, 2),
        ("a", t + timedelta(minutes=1), 4),  # a repeat inside the chunk
    ]
    got = store.enqueue_runs(requests, skip_running={"long"})
    assert [(r.created, r.outcome) for r in got] == [
        (False, "enqueued"),
        (True, "enqueued"),
        (True, "skipped"),
        (True, "enqueued"),
        (False, "enqueued"),
    ]
    assert got[0].job_id == earlier.job_id and got[2].job_id is None
    assert got[4].job_id == got[1].job_id
    new = store.get(got[1].job_id)  # type: ignore[arg-type]
    assert new is not None
    assert (new.kind, new.state, new.max_attempts, new.attempts) == ("a", "open", 4, 0)
    assert new.scheduled_for == t + timedelta(minutes=1)
    assert new.ref == "2026-03-01T12:01:00.000000Z"
    assert store.count_jobs(kind="long") == 1 and store.get(busy) is not None
    assert sorted((r["outcome"], r["job_id"] is None) for r in store.runs("long")) == [
        ("skipped", True)
    ]
    # The job a bulk write makes is the job a single write would find: no second job.
    assert store.enqueue_run("a", t + timedelta(minutes=1)).job_id == got[1].job_id


def test_a_bulk_written_slot_job_is_the_job_a_single_write_makes(store: Store) -> None:
    """Field by field (payload, state, refs, times, the slot row's link): the bulk path —
    one statement of arrays per table on PostgreSQL — writes what ``enqueue_run`` writes."""
    t = datetime(2026, 3, 1, 12, tzinfo=UTC)
    single = store.enqueue_run("one", t, max_attempts=5)
    bulk = store.enqueue_runs([(f"many{i}", t + timedelta(minutes=i), 5) for i in range(3)])
    assert all(r.created and r.outcome == "enqueued" for r in bulk)

    def shape(job_id: int | None, name: str) -> tuple[object, ...]:
        job = store.get(job_id)  # type: ignore[arg-type]
        assert job is not None
        (run,) = store.runs(name)
        assert run["job_id"] == job_id and run["outcome"] == "enqueued"
        # Ready at once (the single path on SQLite reads the clock twice: microseconds apart).
        assert job.run_at is not None and job.created_at is not None
        assert abs(job.run_at - job.created_at) < timedelta(seconds=1)
        return (job.payload, job.state, job.attempts, job.max_attempts, job.last_error)

    assert shape(single.job_id, "one") == (None, "open", 0, 5, None)
    for i, r in enumerate(bulk):
        assert shape(r.job_id, f"many{i}") == shape(single.job_id, "one")
        job = store.get(r.job_id)  # type: ignore[arg-type]
        assert job is not None and job.kind == f"many{i}"
        assert job.ref == (t + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert job.scheduled_for == t + timedelta(minutes=i)


def test_enqueue_runs_falls_back_when_a_key_was_taken_meanwhile(store: Store) -> None:
    """A job with the slot's key exists but no slot row (another writer is half-way): the
    bulk insert is refused by the unique key and the chunk is written slot by slot."""
    t = datetime(2026, 3, 1, 12, tzinfo=UTC)
    ref = t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    taken = store.enqueue("a", ref=ref, scheduled_for=t).job_id
    got = store.enqueue_runs([("a", t, 3), ("b", t, 3)])
    assert [r.created for r in got] == [True, True]
    assert got[0].job_id == taken
    assert store.count_jobs(kind="a") == 1 and store.count_jobs(kind="b") == 1
    assert [r["job_id"] for r in store.runs("a")] == [taken]


def test_a_bulk_written_chunk_wakes_idle_workers_once_and_only_for_new_jobs(
    store: Store,
) -> None:
    """The scheduler's chunk wakes listeners (on PostgreSQL the NOTIFY rides in the job
    insert's statement); a chunk whose slots were all recorded before makes no job and wakes
    nobody."""
    t = datetime(2026, 3, 1, 12, tzinfo=UTC)
    requests = [(f"w{i}", t, 3) for i in range(3)]
    listener = store.listener()
    try:
        made = store.enqueue_runs(requests)
        assert all(r.created for r in made)
        if not store.supports_listen:
            assert listener.wait(0.01) is False
            return
        assert listener.wait(5.0) is True
        assert all(not r.created for r in store.enqueue_runs(requests))
        assert listener.wait(0.5) is False
    finally:
        listener.close()


def test_record_skipped_is_insert_if_absent_and_makes_no_job(store: Store) -> None:
    t = datetime(2026, 3, 1, 12, tzinfo=UTC)
    store.enqueue_run("s", t)
    slots = [t, t + timedelta(minutes=1), t + timedelta(minutes=2)]
    fresh = store.record_skipped("s", slots, batch=2)
    assert [x.astimezone(UTC) for x in fresh] == slots[1:]
    assert store.record_skipped("s", slots) == []
    outcomes = sorted(r["outcome"] for r in store.runs("s"))
    assert outcomes == ["enqueued", "skipped", "skipped"]
    assert store.count_jobs(kind="s") == 1
    assert set(store.last_runs()) == {"s"}


def test_kind_history_counts_rows_since_a_moment(store: Store) -> None:
    store.enqueue("h", max_attempts=1)
    store.enqueue("h")
    [a] = store.claim("w", 1, lease=30, kinds=["h"])
    store.fail("w", a.id, "boom: exit 3")
    [b] = store.claim("w", 1, lease=30, kinds=["h"])
    store.complete("w", [b.id])
    history = store.kind_history(["h", "empty"])
    h = history["h"]
    assert (h.done, h.failed, h.open, h.running) == (1, 1, 0, 0)
    assert h.last_success is not None
    assert h.last_error == "boom: exit 3" and h.last_error_job == a.id
    assert history["empty"].done == 0 and history["empty"].last_error is None
    later = store.db_now() + timedelta(hours=1)
    assert store.kind_history(["h"], since=later)["h"].done == 0


def test_listener_waits_at_most_its_timeout_or_wakes_on_enqueue(store: Store) -> None:
    listener = store.listener()
    try:
        if store.supports_listen:
            store.enqueue("wake")
            assert listener.wait(5.0) is True
        else:
            assert listener.wait(0.01) is False
    finally:
        listener.close()


def test_enqueue_many_in_a_rolled_back_caller_transaction_leaves_no_job(store: Store) -> None:
    with store.engine.connect() as conn:
        trans = conn.begin()
        store.enqueue_many("bulk", [{"n": 1}, None], conn=conn)
        trans.rollback()
    assert store.count_jobs(kind="bulk") == 0
    with store.engine.begin() as conn:
        assert store.enqueue_many("bulk", [{"n": 2}, None], conn=conn) == 2
    assert sorted(str(j.payload) for j in store.list_jobs()) == ["None", "{'n': 2}"]


def test_enqueue_places_the_job_at_run_at_or_after_delay(store: Store) -> None:
    now = store.db_now()
    slot = now.replace(microsecond=0) - timedelta(minutes=1)
    at = store.enqueue("k", run_at=now + timedelta(hours=2), scheduled_for=slot).job_id
    later = store.enqueue("k", delay=3600).job_id
    ready = store.enqueue("k", max_attempts=2).job_id
    jobs = {j.id: j for j in store.list_jobs()}
    assert abs((jobs[at].run_at - (now + timedelta(hours=2))).total_seconds()) < 0.001
    assert jobs[at].scheduled_for == slot and jobs[at].scheduled_for.tzinfo is not None
    assert 3590 < (jobs[later].run_at - now).total_seconds() < 3700
    assert jobs[ready].max_attempts == 2 and jobs[ready].attempts == 0
    assert [j.id for j in store.claim("w", 10, lease=30)] == [ready]


def test_concurrent_enqueues_of_one_ref_make_one_job(store: Store) -> None:
    """Producers racing on one (kind, ref): exactly one creates it, all get its id."""
    import threading

    results: list[tuple[str, int, bool]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def produce(ref: str) -> None:
        try:
            barrier.wait(10)
            got = store.enqueue("race", {"ref": ref}, ref=ref)
            results.append((ref, got.job_id, got.created))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    for n in range(5):
        threads = [threading.Thread(target=produce, args=(f"r{n}",)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert errors == []
    for n in range(5):
        mine = [(job_id, created) for ref, job_id, created in results if ref == f"r{n}"]
        assert len(mine) == 4 and len({job_id for job_id, _ in mine}) == 1
        assert sum(created for _, created in mine) == 1
    assert store.count_jobs(kind="race") == 5


def test_listener_wakes_on_enqueue_many_not_on_a_duplicate_ref(store: Store) -> None:
    if not store.supports_listen:
        return
    store.enqueue("wake", ref="once")
    listener = store.listener()
    try:
        store.enqueue("wake", ref="once")  # exists: nothing new to run, nobody woken
        assert listener.wait(0.3) is False
        store.enqueue_many("wake", [None, None])
        assert listener.wait(5.0) is True
    finally:
        listener.close()
