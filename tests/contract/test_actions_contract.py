"""The operators' action log and the worker rows (schema step 5), on every backend; and the
store without them on a database still at step 4."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store, open_store
from migrate_cron.store.actions import Actor
from migrate_cron.store.leases import SCHEDULER_PAUSE
from migrate_cron.store.workers import WorkerInfo
from migrate_cron.vocabulary import Action, JobState

ANN = Actor("ann", "cli@host-a")
BOB = Actor("bob", "10.0.0.7")


def _fail(store: Store, kind: str, n: int) -> list[int]:
    ids = [store.enqueue(kind, max_attempts=1).job_id for _ in range(n)]
    store.claim("w", n, lease=30, kinds=[kind])
    for i in ids:
        store.fail("w", i, "boom", terminal=True)
    return ids


def test_a_retry_by_ids_records_one_row_per_job_named(store: Store) -> None:
    failed = _fail(store, "export", 2)
    done = store.enqueue("mail").job_id
    assert store.retry([*failed, done], actor=ANN) == 2
    for job_id in failed:
        [row] = store.actions_for_job(job_id)
        assert (row.who, row.origin, row.action) == ("ann", "cli@host-a", Action.RETRY)
        assert (row.kind, row.job_id, row.changed) == ("export", job_id, 1)
        assert row.detail == "one of 3 jobs named"
    [skipped] = store.actions_for_job(done)
    assert (skipped.kind, skipped.changed) == ("mail", 0)
    assert store.db_now() >= skipped.at


def test_a_retry_of_a_kinds_failed_jobs_records_one_row_for_the_kind(store: Store) -> None:
    _fail(store, "export", 3)
    assert store.retry(kind="export", states=(JobState.FAILED,), actor=BOB) == 3
    [row] = store.actions_for_kind("export")
    assert (row.action, row.kind, row.job_id, row.changed) == (
        Action.RETRY_FAILED, "export", None, 3,
    )  # fmt: skip
    assert store.retry(all_failed=True, states=(JobState.FAILED,), actor=BOB) == 0


def test_a_chunked_change_records_once_with_the_total(store: Store) -> None:
    _fail(store, "export", 5)
    assert store.retry(kind="export", states=(JobState.FAILED,), batch=2, actor=ANN) == 5
    [row] = store.actions_for_kind("export")
    assert row.changed == 5


def test_cancel_pause_resume_and_run_now_are_recorded(store: Store) -> None:
    job_id = store.enqueue("export").job_id
    assert store.cancel([job_id], actor=ANN) == 1
    assert store.pause(["export", SCHEDULER_PAUSE], "ann@host", actor=ANN) == [
        "export", SCHEDULER_PAUSE,
    ]  # fmt: skip
    assert store.pause(["export"], "ann@host", actor=ANN) == []
    assert store.resume(["export"], actor=BOB) == ["export"]
    new_id = store.run_now("export", {"n": 1}, max_attempts=2, actor=BOB)
    job = store.get(new_id)
    assert job is not None and (job.state, job.max_attempts, job.payload) == (
        JobState.OPEN, 2, {"n": 1},
    )  # fmt: skip
    rows = store.actions_for_kind("export")
    assert [(r.action, r.changed) for r in rows] == [
        (Action.RUN_NOW, 1), (Action.RESUME, 1), (Action.PAUSE, 0), (Action.PAUSE, 1),
        (Action.CANCEL, 1),
    ]  # fmt: skip
    assert rows[0].job_id == new_id
    assert [r.action for r in store.actions_for_job(job_id)] == [Action.CANCEL]
    assert [r.action for r in store.actions_for_kind(SCHEDULER_PAUSE)] == [Action.PAUSE]


def test_without_an_actor_nothing_is_recorded_and_reads_are_bounded(store: Store) -> None:
    job_id = store.enqueue("k").job_id
    store.cancel([job_id])
    store.run_now("k", max_attempts=1)
    assert store.actions_for_kind("k") == []
    for n in range(5):
        assert store.record_action(ANN, Action.PAUSE, kind="k", detail=f"n={n}", changed=1)
    rows = store.actions_for_kind("k", limit=3)
    assert [r.detail for r in rows] == ["n=4", "n=3", "n=2"]


def test_text_is_stored_as_given(store: Store) -> None:
    who = Actor("Zoë O'Brien; DROP TABLE job; --", "::1")
    store.record_action(who, Action.RUN_NOW, kind="k'ind", detail="nul\x00 ✓")
    [row] = store.actions_for_kind("k'ind")
    assert row.who == who.who and row.origin == "::1"
    assert row.detail == "nul\ufffd ✓"


def _info(name: str = "h1:42:abc", kinds: tuple[str, ...] | None = ("a", "b")) -> WorkerInfo:
    return WorkerInfo(name, "h1", "root", kinds, 42, 4)


def test_a_worker_row_lives_from_start_to_stop(store: Store) -> None:
    assert store.worker_started(_info())
    [w] = store.workers()
    assert (w.name, w.host, w.run_as, w.kinds, w.pid, w.concurrency) == (
        "h1:42:abc", "h1", "root", ("a", "b"), 42, 4,
    )  # fmt: skip
    assert w.any_user and w.in_flight == 0 and w.stopped_at is None
    assert 0 <= w.seen_ago < 60 and w.started_at <= w.last_seen
    assert store.worker_seen(_info(), in_flight=3)
    [w] = store.workers()
    assert w.in_flight == 3
    assert store.worker_stopped("h1:42:abc")
    [w] = store.workers()
    assert w.stopped_at is not None and w.in_flight == 0


def test_a_heartbeat_writes_a_missing_row_again(store: Store) -> None:
    info = _info(kinds=None)
    assert store.worker_seen(info, in_flight=2)
    [w] = store.workers()
    assert (w.kinds, w.in_flight) == (None, 2)


@pytest.fixture
def clocked(db_url: str, table_prefix: str) -> Iterator[tuple[Store, FakeClock]]:
    from tests.ops.helpers import clocked_store

    with clocked_store(db_url, table_prefix, FakeClock().now()) as pair:
        yield pair


def test_old_rows_leave_with_cleanup_and_the_horizon(clocked: tuple[Store, FakeClock]) -> None:
    store, clock = clocked
    store.worker_started(_info("old"))
    store.record_action(ANN, Action.PAUSE, kind="k")
    clock.advance(10 * 86400)
    store.worker_started(_info("new"))
    store.record_action(BOB, Action.RESUME, kind="k")
    assert [w.name for w in store.workers(horizon=86400)] == ["new"]
    assert [w.name for w in store.workers(horizon=30 * 86400)] == ["new", "old"]
    result = store.cleanup(done_older_than=7 * 86400, failed_older_than=7 * 86400)
    assert (result.workers, result.actions) == (1, 1)
    assert [w.name for w in store.workers(horizon=30 * 86400)] == ["new"]
    assert [r.who for r in store.actions_for_kind("k")] == ["bob"]
    kept = store.cleanup(done_older_than=None, failed_older_than=None)
    assert (kept.workers, kept.actions) == (0, 0)


def test_a_database_at_step_4_works_without_the_console(db_url: str, table_prefix: str) -> None:
    """A package upgraded before ``db upgrade``: every acting operation works and records
    nothing, the reads are empty, the worker rows are skipped."""
    from tests.conftest import fresh_store

    with fresh_store(db_url, table_prefix) as made:
        for table in (made.tables.workers, made.tables.actions, made.tables.tallies):
            table.drop(made.engine)
        store = open_store(db_url, prefix=table_prefix)
        try:
            assert store.console_enabled() is False
            [job_id] = _fail(store, "k", 1)
            assert store.retry([job_id], actor=ANN) == 1
            assert store.cancel([job_id], actor=ANN) == 1
            assert store.pause(["k"], "ann", actor=ANN) == ["k"]
            assert store.resume(["k"], actor=ANN) == ["k"]
            assert store.run_now("k", max_attempts=1, actor=ANN) > job_id
            assert store.record_action(ANN, Action.PAUSE, kind="k") is False
            assert store.actions_for_job(job_id) == [] and store.actions_for_kind("k") == []
            assert store.worker_started(_info()) is False
            assert store.worker_seen(_info(), 1) is False
            assert store.worker_stopped("x") is False
            assert store.workers() == []
            result = store.cleanup(done_older_than=0, failed_older_than=0)
            assert (result.workers, result.actions) == (0, 0)
        finally:
            store.dispose()
            made.create_schema()  # for the fixture's drop
