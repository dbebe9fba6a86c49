"""A worker's row in ``job_workers``: written at start, renewed by the heartbeat with the jobs
it holds, closed by a graceful stop — and left open by a worker that was killed."""

from __future__ import annotations

import getpass
import os
import signal
import socket
from pathlib import Path

from migrate_cron.store import Store
from migrate_cron.store.workers import ROOT_USER, WorkerRecord
from tests.worker.helpers import (
    kill_pids_from,
    registry,
    spawn_cli_worker,
    start_worker,
    stop_process,
    wait_for,
)


def _row(store: Store, name: str) -> WorkerRecord | None:
    return next((w for w in store.workers() if w.name == name), None)


def test_the_worker_loop_keeps_its_row(store: Store, tmp_path: Path) -> None:
    reg = registry({"slow": {"command": f"touch {tmp_path}/started; sleep 30", "cwd": "."},
                    "other": {"command": "true"}})  # fmt: skip
    tw = start_worker(store, reg, worker_id="h:1:abc", heartbeat=0.3, concurrency=3, grace=0.1)
    try:
        first = wait_for(lambda: _row(store, "h:1:abc"), 30, what="the worker row")
        user = ROOT_USER if os.geteuid() == 0 else getpass.getuser()
        assert (first.host, first.run_as, first.kinds, first.pid, first.concurrency) == (
            socket.gethostname(), user, ("other", "slow"), os.getpid(), 3,
        )  # fmt: skip
        assert first.stopped_at is None
        job_id = store.enqueue("slow").job_id
        busy = wait_for(
            lambda: (w := _row(store, "h:1:abc")) and w.in_flight == 1 and w, 30, what="busy"
        )
        assert busy.last_seen > first.last_seen
        assert [j.id for j in store.list_jobs(state="running")] == [job_id]
    finally:
        tw.stop()
        kill_pids_from()
    gone = _row(store, "h:1:abc")
    assert gone is not None and gone.stopped_at is not None and gone.in_flight == 0


def test_a_worker_process_says_goodbye_and_a_killed_one_does_not(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    (tmp_path / "migrate-cron.toml").write_text('[jobs.k]\ncommand = "true"\n')
    args = ("--heartbeat", "0.5", "--poll", "0.1", "--kinds", "k",
            "--database-url", db_url, "--table-prefix", table_prefix)  # fmt: skip
    polite, _ = spawn_cli_worker(*args, cwd=tmp_path)
    killed, _ = spawn_cli_worker(*args, cwd=tmp_path)
    try:

        def rows() -> dict[int | None, WorkerRecord]:
            return {w.pid: w for w in store.workers()}

        wait_for(lambda: {polite.pid, killed.pid} <= set(rows()), 60, what="both rows")
        polite.send_signal(signal.SIGTERM)
        assert polite.wait(60) == 0
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(10)
    finally:
        stop_process(polite)
        stop_process(killed)
    after = rows()
    assert after[polite.pid].stopped_at is not None
    assert after[killed.pid].stopped_at is None
    assert after[killed.pid].kinds == ("k",)
