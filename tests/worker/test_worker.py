"""The worker loop against real databases (SQLite, PostgreSQL, MariaDB), in-process.

Signals, exit codes and killed workers are in ``test_worker_cli.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from migrate_cron.store import Store
from migrate_cron.worker.handlers import Context, handler, unregister
from tests.worker.helpers import (
    kill_pids_from,
    pid_alive,
    registry,
    run_once,
    start_worker,
    wait_for,
)

NO_BACKOFF = {"base": 0.0, "cap": 0.0}


def _job(store: Store, job_id: int) -> Any:
    job = store.get(job_id)
    assert job is not None
    return job


def test_fails_twice_then_succeeds_ends_done_after_three_attempts(
    store: Store, tmp_path: Path
) -> None:
    reg = registry(
        {
            "flaky": {
                "command": '[ "$MIGRATE_CRON_ATTEMPT" -ge 3 ] || { echo "not yet" >&2; exit 1; }',
                "backoff": NO_BACKOFF,
            }
        }
    )
    job_id = store.enqueue("flaky", max_attempts=5).job_id
    summary, log = run_once(store, reg)
    job = _job(store, job_id)
    assert (job.state, job.attempts, job.last_error) == ("done", 3, None)
    assert summary.started == 3
    assert log.count("outcome=retry") == 2 and log.count("outcome=done") == 1


def test_always_failing_job_is_shelved_with_exit_code_and_stderr_tail(store: Store) -> None:
    reg = registry(
        {
            "broken": {
                "command": "echo progress; echo 'ERROR: upstream said 503' >&2; exit 7",
                "backoff": NO_BACKOFF,
            }
        }
    )
    job_id = store.enqueue("broken", max_attempts=3).job_id
    run_once(store, reg)
    job = _job(store, job_id)
    assert job.state == "failed" and job.attempts == 3
    assert job.last_error == "exit code 7; stderr: ERROR: upstream said 503"
    assert job.output == "progress\n[stderr]\nERROR: upstream said 503\n"
    assert job.finished_at is not None and job.locked_until is None


def test_retries_wait_for_the_backoff(store: Store, tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    reg = registry(
        {
            "slowfail": {
                "command": f"date +%s.%N >> {starts}; exit 1",
                "backoff": {"base": 0.2, "cap": 10.0},
            }
        }
    )
    job_id = store.enqueue("slowfail", max_attempts=3).job_id
    tw = start_worker(store, reg, rand=lambda: 1.0)  # full jitter at its ceiling
    try:
        wait_for(lambda: _job(store, job_id).state == "failed", 30, what="job shelved")
    finally:
        tw.stop()
    times = [float(t) for t in starts.read_text().split()]
    assert len(times) == 3
    # attempt n failed → next run no earlier than min(cap, base·2^n): 0.4 s, then 0.8 s.
    assert times[1] - times[0] >= 0.4
    assert times[2] - times[1] >= 0.8


def test_unknown_kind_or_shell_text_in_a_row_runs_nothing(store: Store, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    out = tmp_path / "out"
    evil = f"$(touch {canary}); `touch {canary}`; touch {canary} #"
    reg = registry({"echo-payload": {"command": f"printf '%s' \"$MIGRATE_CRON_PAYLOAD\" > {out}"}})
    unknown = store.enqueue("no-such-job", {"command": f"touch {canary}"}).job_id
    shell_kind = store.enqueue(f"x; touch {canary}", evil).job_id
    data = store.enqueue("echo-payload", evil).job_id
    run_once(store, reg)
    for job_id in (unknown, shell_kind):  # not claimed: they wait for a worker that can run them
        job = _job(store, job_id)
        assert job.state == "open" and job.attempts == 0
    run_once(store, reg, any_kind=True)  # a catch-all worker claims them and shelves them
    for job_id in (unknown, shell_kind):
        job = _job(store, job_id)
        assert job.state == "failed" and job.attempts == 1  # shelved at once, no retries
        assert "is not in the registry" in job.last_error and "nothing was run" in job.last_error
    assert _job(store, data).state == "done"
    assert json.loads(out.read_text()) == evil  # the text arrived as data, verbatim
    assert not canary.exists()


@pytest.fixture
def app_handler() -> Iterator[list[Any]]:
    seen: list[Any] = []

    @handler("t-app-signup")
    def on_signup(payload: Any, ctx: Context) -> str:
        seen.append((payload, ctx.attempt, ctx.job_id))
        return "welcome sent"

    yield seen
    unregister("t-app-signup")


def test_enqueue_in_the_apps_transaction(
    store: Store, db_url: str, backend: str, app_handler: list[Any]
) -> None:
    """Rolled back → no job; committed → the worker runs it. On PostgreSQL the idle worker
    polls only every 60 s, so finishing well within that proves the NOTIFY woke it."""
    app_engine = create_engine(db_url)  # the application's own engine, not ours
    poll = 60.0 if backend == "postgresql" else 0.1
    tw = start_worker(store, registry({}), poll=poll)
    try:
        wait_for(lambda: "worker-start" in tw.log.getvalue(), 10)
        with app_engine.connect() as conn:
            trans = conn.begin()
            store.enqueue("t-app-signup", {"user": 1}, conn=conn)
            trans.rollback()
        with app_engine.begin() as conn:
            job_id = store.enqueue("t-app-signup", {"user": 2}, conn=conn).job_id
        wait_for(lambda: _job(store, job_id).state == "done", 20, what="job done")
    finally:
        tw.stop()
        app_engine.dispose()
    assert app_handler == [({"user": 2}, 1, job_id)]
    assert [j.id for j in store.list_jobs()] == [job_id]
    assert _job(store, job_id).output == "welcome sent"


def test_python_handler_exception_is_retried_then_shelved(store: Store) -> None:
    calls: list[int] = []

    @handler("t-boom")
    def boom(payload: Any, ctx: Context) -> None:
        calls.append(ctx.attempt)
        raise RuntimeError(f"attempt {ctx.attempt} broke")

    try:
        job_id = store.enqueue("t-boom", max_attempts=2).job_id
        run_once(store, registry({}), rand=lambda: 0.0)
    finally:
        unregister("t-boom")
    job = _job(store, job_id)
    assert calls == [1, 2]
    assert job.state == "failed" and job.last_error == "RuntimeError: attempt 2 broke"
    assert "Traceback" in job.output


def test_timeout_kills_grandchildren_through_the_worker(store: Store, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    reg = registry(
        {
            "hang": {
                "command": f"sleep 100 & echo $! >> {pids}; echo $$ >> {pids}; sleep 100",
                "timeout": 0.5,
            }
        }
    )
    job_id = store.enqueue("hang", max_attempts=1).job_id
    try:
        run_once(store, reg)
        job = _job(store, job_id)
        assert job.state == "failed" and job.last_error.startswith("timed out after 0.5s")
        recorded = [int(p) for p in pids.read_text().split()]
        assert len(recorded) == 2
        wait_for(lambda: not any(pid_alive(p) for p in recorded), 10, what="both gone")
    finally:
        kill_pids_from(pids)


def test_heartbeat_keeps_a_job_longer_than_its_lease(store: Store) -> None:
    # Three leases long; a loaded machine may delay a heartbeat by a second or two (the
    # worker stops a run whose lease it could not renew in time, by design).
    reg = registry({"long": {"command": "sleep 7"}})
    job_id = store.enqueue("long").job_id
    run_once(store, reg, heartbeat=0.3, lease=2.5)
    job = _job(store, job_id)
    assert (job.state, job.attempts) == ("done", 1)


def test_lost_lease_stops_the_command_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    reg = registry({"long": {"command": f"echo $$ > {pid_file}; exec sleep 100"}})
    job_id = store.enqueue("long").job_id
    # concurrency 1 and the job running: this worker claims nothing else meanwhile.
    tw = start_worker(store, reg, worker_id="w-slow", concurrency=1, heartbeat=0.3, lease=5.0)
    try:
        wait_for(pid_file.exists, 20, what="job started")
        pid = int(wait_for(lambda: pid_file.read_text().strip(), 5))
        # Another worker takes the job over (as after an expired lease).
        assert store.release("w-slow", [job_id]) == 1
        assert [j.id for j in store.claim("w-other", 1, lease=60)] == [job_id]
        wait_for(lambda: not pid_alive(pid), 20, what="our run stopped")
        wait_for(lambda: "outcome=lost" in tw.log.getvalue(), 10)
    finally:
        tw.stop()
        kill_pids_from(pid_file)
    job = _job(store, job_id)
    assert (job.state, job.locked_by) == ("running", "w-other")
    assert "lease-lost" in tw.log.getvalue()


def test_graceful_stop_in_process_releases_unstarted_jobs(store: Store, tmp_path: Path) -> None:
    reg = registry({"slow": {"command": f"touch {tmp_path}/started-$MIGRATE_CRON_JOB_ID; sleep 1"}})
    ids = [store.enqueue("slow").job_id for _ in range(6)]
    tw = start_worker(store, reg, concurrency=2, batch=6, grace=30)
    wait_for(lambda: len(list(tmp_path.glob("started-*"))) == 2, 20, what="two running")
    summary = tw.stop()
    assert summary.started == 2 and not summary.abandoned
    jobs = [_job(store, i) for i in ids]
    assert sorted(j.state for j in jobs) == ["done", "done", "open", "open", "open", "open"]
    assert all(j.attempts == 0 and j.locked_by is None for j in jobs if j.state == "open")
    assert len(list(tmp_path.glob("started-*"))) == 2


def test_log_has_one_line_per_start_and_finish(store: Store) -> None:
    reg = registry({"ok": {"command": "true"}})
    job_id = store.enqueue("ok").job_id
    _, log = run_once(store, reg)
    lines = [line for line in log.splitlines() if f"id={job_id} " in line]
    assert len(lines) == 2
    assert " start kind=ok " in lines[0] and "attempt=1/5" in lines[0]
    assert " finish kind=ok " in lines[1] and "outcome=done" in lines[1]
    assert "duration=" in lines[1]


def test_many_short_jobs_each_run_exactly_once(store: Store) -> None:
    seen: list[int] = []

    @handler("t-count")
    def count(payload: Any, ctx: Context) -> None:
        seen.append(payload)

    try:
        store.enqueue_many("t-count", list(range(500)))
        run_once(store, registry({}), concurrency=4, batch=50)
    finally:
        unregister("t-count")
    assert sorted(seen) == list(range(500))
    [stats] = store.status(since=datetime(2000, 1, 1, tzinfo=UTC), slots=False).kinds
    assert (stats.done, stats.running, stats.ready) == (500, 0, 0)


def test_worker_survives_its_connections_being_killed(pg_database: str, table_prefix: str) -> None:
    """PostgreSQL only (pg_terminate_backend): every connection of the worker — pool and
    LISTEN — is cut by the server, as in a restart or failover; it logs, reconnects, goes on."""
    from migrate_cron.store import open_store

    store = open_store(pg_database, prefix=table_prefix)
    store.create_schema()
    worker_store = open_store(pg_database, prefix=table_prefix)
    tw = start_worker(worker_store, registry({"ok": {"command": "true"}}), poll=0.2)
    try:
        first = store.enqueue("ok").job_id
        wait_for(lambda: _job(store, first).state == "done", 20)
        with store.engine.connect() as conn:
            killed = conn.exec_driver_sql(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).scalar_one()
        assert killed >= 1
        store.engine.dispose()  # our own pooled connections were cut too
        second = store.enqueue("ok").job_id
        wait_for(lambda: _job(store, second).state == "done", 30, what="job after the outage")
        assert "listen-lost" in tw.log.getvalue()
    finally:
        tw.stop()
        worker_store.dispose()
        store.drop_schema()
        store.dispose()
