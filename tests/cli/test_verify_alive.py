"""``verify`` after a switch checks what the job now needs: a scheduler holding the leader
lease (scheduler mode) and a worker taking its jobs. The installed command, a real database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from migrate_cron.store import Store
from migrate_cron.store.leases import REAPER_LEASE, SCHEDULER_LEASE
from tests.conftest import run_cli


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

    # A worker shows itself by the reaper lease it renews; one that never ran this kind
    # cannot be said to serve it (its registry or user may not fit): waiting, not ok.
    assert store.acquire_lease(REAPER_LEASE, "w1:4343:cd", 60)
    check = _alive(env, tmp_path)
    assert check["status"] == "waiting", check
    assert "none has run a job of import-orders" in str(check["summary"])
    assert "scheduler sched1:4242:ab leads" in str(check["details"])

    # A job of the kind waiting 10 minutes: nobody takes it.
    store.enqueue("import-orders", run_at=datetime.now(UTC) - timedelta(minutes=10))
    check = _alive(env, tmp_path)
    assert check["status"] == "fail"
    assert "no worker takes them" in str(check["summary"])
    assert "1 ready job(s) of import-orders" in str(check["summary"])

    # A real worker runs it (the command is missing: the run fails and waits for its retry).
    ran = run_cli("worker", "--once", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    check = _alive(env, tmp_path)
    assert check["status"] == "ok", check
    assert "workers ran 1 job(s) of it since the switch" in str(check["summary"])
