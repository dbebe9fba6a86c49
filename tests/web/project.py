"""A dashboard's world for the tests: the sample crontab's registry with two lines switched,
and a queue with ready, running, failed and scheduled jobs — made with the installed command
and the Store's own operations, as a user's would be."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from migrate_cron.store import Store
from tests.conftest import run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
#: The two lines ``project`` switches, and to which mode.
SWITCHED = {"invoices-export": "enqueue", "orders-push-erp": "scheduler"}
WORKER = "web-test-host:4242"


def project(directory: Path) -> Path:
    """``generate registry`` of samples/shop.crontab in ``directory``, two lines migrated
    (on a SQLite file of its own: the switch only needs the tables to exist); returns the
    registry's path."""
    shutil.copy(SAMPLES / "shop.crontab", directory / "shop.crontab")
    env = {
        "MIGRATE_CRON_DATABASE_URL": f"sqlite:///{directory / 'switch.db'}",
        "MIGRATE_CRON_TABLE_PREFIX": "",
        "MIGRATE_CRON_REGISTRY": str(directory / "migrate-cron.toml"),
        "HOME": str(directory),
    }
    # --tz: Debian's cron ignores the sample's CRON_TZ; --force: its mail line (cut at %).
    generate = ("generate", "registry", "shop.crontab", "--tz", "UTC", "--force")
    steps = [generate, ("db", "upgrade")]
    steps += [("migrate", name, "--format", "user", "--to", to) for name, to in SWITCHED.items()]
    for args in steps:
        proc = run_cli(*args, env=env, cwd=directory, timeout=120)
        assert proc.returncode == 0, f"{args}: {proc.stdout}{proc.stderr}"
    return directory / "migrate-cron.toml"


@dataclass(frozen=True)
class Seeded:
    ready: list[int]
    running: int
    failed: list[int]
    scheduled: int


def seed(store: Store) -> Seeded:
    """Two ready jobs, one running, two failed (with output), one slot of a scheduled job, and
    a few done ones (the overview's run-time chart)."""
    now = store.db_now()
    for kind, n in (("curl-refresh", 3), ("telescope-prune", 1), ("orders-push-erp", 2)):
        ids = [store.enqueue(kind).job_id for _ in range(n)]
        claimed = store.claim(WORKER, n, lease=600, kinds=[kind])
        assert sorted(j.id for j in claimed) == sorted(ids)
        assert store.complete(WORKER, ids) == n
    ready = [store.enqueue("carts-remind-abandoned", {"chunk": i}).job_id for i in (1, 2)]
    slot = now.replace(second=0, microsecond=0) - timedelta(minutes=5)
    run = store.enqueue_run("orders-push-erp", slot)
    assert run.job_id is not None
    (running,) = store.claim(WORKER, 1, lease=600, kinds=["orders-push-erp"])
    failed = []
    for i in (1, 2):
        job_id = store.enqueue("invoices-export", {"day": f"2026-12-0{i}"}, max_attempts=1).job_id
        (claimed,) = store.claim(WORKER, 1, lease=600, kinds=["invoices-export"])
        assert claimed.id == job_id
        state = store.fail(
            WORKER, job_id, f"exit 3: SFTP upload refused ({i})", output=f"line 1\nupload {i}\n"
        )
        assert state == "failed"
        failed.append(job_id)
    return Seeded(ready, running.id, failed, run.job_id)
