"""``verify`` after a switch checks what the job now needs: a scheduler holding the leader
lease (scheduler mode) and a heartbeating worker that can run the job (issue 32, item 3). The
installed command, a real database, a real worker."""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

from migrate_cron.store import Store
from migrate_cron.store.leases import REAPER_LEASE, SCHEDULER_LEASE
from migrate_cron.store.workers import WorkerInfo
from tests.conftest import run_cli
from tests.faults.procs import Fleet, wait_for


def _alive(env: dict[str, str], cwd: Path) -> dict[str, object]:
    done = run_cli("verify", "import-orders", "--json", env=env, cwd=cwd)
    report = json.loads(done.stdout)
    [check] = [c for c in report["checks"] if c["key"] == "alive"]
    # exit 1 only on a failed check (waiting is not one); on a slow machine the */5 slot may
    # pass during the test, failing the queue check, so the code follows every check
    failed = any(c["status"] == "fail" for c in report["checks"])
    assert (done.returncode == 0) == (not failed), done.stdout
    return check


def test_verify_names_the_missing_scheduler_and_the_missing_worker(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store
) -> None:
    (tmp_path / "app.cron").write_text("*/5 * * * * /usr/local/bin/import-orders\n")
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(tmp_path / "migrate-cron.toml"),
    }
    assert run_cli("generate", "registry", "app.cron", env=env, cwd=tmp_path).returncode == 0
    moved = run_cli(
        "migrate", "import-orders", "--to", "scheduler", "--database-url", db_url,
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert moved.returncode == 0, moved.stderr

    check = _alive(env, tmp_path)
    assert check["status"] == "fail"
    assert "no scheduler holds the leader lease" in str(check["summary"])

    assert store.acquire_lease(SCHEDULER_LEASE, "sched1:4242:ab", 60)
    check = _alive(env, tmp_path)
    assert check["status"] == "fail", check
    assert "no worker is running" in str(check["summary"])

    # A worker heartbeats, but claims other kinds: it does not serve this job.
    assert store.acquire_lease(REAPER_LEASE, "w1:4343:cd", 60)
    other = WorkerInfo("w1:4343:cd", "h1", "root", ("mail",), 4343, 1, heartbeat=10.0)
    assert store.worker_started(other)
    check = _alive(env, tmp_path)
    assert check["status"] == "fail", check
    assert "none can run import-orders: w1:4343:cd claims only mail" in str(check["summary"])

    # A job of the kind waiting 10 minutes: nobody takes it.
    store.enqueue("import-orders", run_at=datetime.now(UTC) - timedelta(minutes=10))
    check = _alive(env, tmp_path)
    assert check["status"] == "fail"
    assert "no worker takes them" in str(check["summary"])
    assert "1 ready job(s) of import-orders" in str(check["summary"])

    # A real worker with this registry serves it as soon as it heartbeats (here it also runs
    # the waiting job: the command is missing, so the run fails and waits for its retry);
    # stopped, it serves nothing.
    with Fleet(tmp_path) as fleet:
        worker = fleet.start(["worker", "--heartbeat", "1"], {**os.environ, **env}, cwd=tmp_path)
        check = wait_for(
            lambda: (c := _alive(env, tmp_path))["status"] == "ok" and c,
            60,
            f"verify to see the worker\n{worker.output()}",
        )
        assert "can run it (claims import-orders, runs as root)" in str(check["summary"])
        worker.signal(signal.SIGTERM)
        assert worker.wait(30) == 0, worker.output()[-2000:]
    assert store.worker_stopped(other.name)
    check = _alive(env, tmp_path)
    assert check["status"] == "fail", check
    assert "no worker is running (the last one, " in str(check["summary"])
    assert "stopped" in str(check["summary"])
