"""``verify`` after a switch checks what the job now needs: a scheduler holding the leader
lease (scheduler mode) and a worker taking its jobs. The installed command, a real database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from migrate_cron.store import Store
from migrate_cron.store.leases import SCHEDULER_LEASE
from tests.conftest import run_cli


def _alive(env: dict[str, str], cwd: Path) -> dict[str, object]:
    done = run_cli("verify", "import-orders", "--json", env=env, cwd=cwd)
    report = json.loads(done.stdout)
    [check] = [c for c in report["checks"] if c["key"] == "alive"]
    assert (done.returncode == 0) == (check["status"] != "fail"), done.stdout
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
    assert check["status"] == "ok", check
    assert "scheduler sched1:4242:ab leads" in str(check["summary"])

    # A job of the kind waiting 10 minutes: nobody takes it.
    store.enqueue("import-orders", run_at=datetime.now(UTC) - timedelta(minutes=10))
    check = _alive(env, tmp_path)
    assert check["status"] == "fail"
    assert "no worker takes them" in str(check["summary"])
    assert "1 ready job(s) of import-orders" in str(check["summary"])
