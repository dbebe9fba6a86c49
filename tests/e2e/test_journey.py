"""The whole journey of one crontab line, through the installed `migrate-cron` command, on
SQLite and PostgreSQL: analyze → plan → generate registry + Alembic revision → db upgrade →
migrate → fire twice as cron would → a worker runs it once → status → verify → migrations →
rollback restores the file byte for byte. Each step checks files, rows and exit codes."""

from __future__ import annotations

import json
import os
import signal
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.crontab.schedule import Schedule
from migrate_cron.crontab.timezone import host_timezone
from migrate_cron.registry import load_registry
from migrate_cron.store import open_store
from tests.conftest import run_cli
from tests.faults.procs import Fleet, wait_for

from .journey import cron_command, fire_like_cron, shop_crontab


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_journey_of_one_line(
    backend: str, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    crontab, runs_log = shop_crontab(tmp_path)
    original = crontab.read_bytes()
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": "",
        "HOME": str(tmp_path),
    }

    def cli(*args: str, code: int = 0) -> str:
        proc = run_cli(*args, env=env, cwd=tmp_path, timeout=120)
        assert proc.returncode == code, f"{args}: {proc.returncode}\n{proc.stdout}{proc.stderr}"
        return proc.stdout + proc.stderr

    registry = tmp_path / "migrate-cron.toml"
    env["MIGRATE_CRON_REGISTRY"] = str(registry)
    store = open_store(db_url, prefix=table_prefix)
    try:
        # 1. analyze, 2. plan: lost work first (hand-overs with evidence), then the poller;
        # the framework scheduler left alone. Exit 0: no error finding (the `%` body fed to
        # mail is on purpose: an info).
        assert "orders-push-erp" in cli("analyze", "shop.crontab", "--json", code=0)
        plan = json.loads(run_cli("plan", "shop.crontab", "--json", env=env, cwd=tmp_path).stdout)[
            "plan"
        ]
        assert [p["step"] for p in plan] == sorted(p["step"] for p in plan)
        assert plan[0]["step"] == 1 and plan[0]["name"] == "invoices-export"
        first = next(p for p in plan if p["name"] == "orders-push-erp")
        assert first["step"] == 2 and first["line"] == 12
        assert "polls every 5 min" in first["reasons"]
        leave = {p["name"]: p for p in plan if p["step"] == 4}
        assert "schedule-run" in leave
        name = first["name"]

        # 3. the registry (re-running keeps it byte for byte) and the Alembic revision.
        # Debian's cron (the default flavour) ignores the sample's CRON_TZ: its lines fire in
        # the daemon's zone, which --tz names (without it they are refused: exit 1); with it
        # every line is written (the mail line's % body is its input, on purpose).
        refused = cli("generate", "registry", "shop.crontab", code=1)
        assert "shop.crontab:12: not registered: job orders-push-erp" in refused
        assert not registry.exists() or "[jobs.orders-push-erp]" not in registry.read_text()
        registry.unlink(missing_ok=True)
        generate = ("generate", "registry", "shop.crontab", "--tz", host_timezone())
        done = run_cli(*generate, "--json", env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        statuses = [(j["status"], j["line"]) for j in json.loads(done.stdout)["jobs"]]
        assert sorted(statuses) == [("new", n) for n in (9, 12, 15, 18, 21, 24, 27, 28)]
        text = registry.read_text()
        cli(*generate, code=0)
        assert registry.read_text() == text
        spec = load_registry(registry).get(name)
        assert spec.mode == "cron" and spec.timezone == host_timezone()
        assert spec.source is not None and spec.source.line == 12
        assert original.split(b"\n")[11].decode() == spec.source.text
        cli("generate", "migration", "--init", "alembic", "--table-prefix", table_prefix)
        assert list((tmp_path / "alembic" / "versions").glob("*.py"))

        # 4. db upgrade
        cli("db", "upgrade")
        assert store.count_jobs() == 0

        # 5. migrate: a dry run changes nothing; the real one rewrites only line 12
        registry_before = registry.read_bytes()
        assert "+*/5 * * * *" in cli(
            "migrate", name, "--crontab", "shop.crontab", "--format", "user", "--dry-run"
        )
        assert crontab.read_bytes() == original and registry.read_bytes() == registry_before
        cli("migrate", name, "--crontab", "shop.crontab", "--format", "user")
        after = crontab.read_bytes().split(b"\n")
        before = original.split(b"\n")
        assert [i for i, (a, b) in enumerate(zip(after, before, strict=True)) if a != b] == [11]
        assert after[11].startswith(b"*/5 * * * * /") and b" enqueue orders-push-erp " in after[11]
        spec = load_registry(registry).get(name)
        assert spec.mode == "enqueue" and spec.migration is not None
        assert spec.migration.previous_mode == "cron"

        # 6. fire it as cron would: the same minute on two hosts → one job, one slot row
        command = cron_command(crontab, name)
        slot = Schedule(spec.schedule or "", spec.timezone).latest_at_or_before(datetime.now(UTC))
        assert slot is not None
        iso = slot.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert fire_like_cron(f"{command} --slot {iso}", hosts=2, env=env) == [0, 0]
        jobs = store.list_jobs(kind=name)
        assert len(jobs) == 1 and jobs[0].state == "open" and jobs[0].scheduled_for == slot
        assert len(store.runs(name)) == 1

        # 7. a worker runs it once, with the slot passed to the command
        cli("worker", "--once")
        assert store.get(jobs[0].id).state == "done"  # type: ignore[union-attr]
        assert runs_log.read_text().splitlines() == [
            f"ran: php artisan orders:push-erp --limit=250 (slot {slot.isoformat()})"
        ]

        # 8. status shows it; with a worker running (as in production), verify passes every
        # check; migrations shows the numbers
        status = json.loads(run_cli("status", "--json", env=env, cwd=tmp_path).stdout)
        assert name in json.dumps(status)
        with Fleet(tmp_path) as fleet:
            worker = fleet.start(
                ["worker", "--heartbeat", "1"], {**os.environ, **env}, label="worker", cwd=tmp_path
            )

            def verified() -> dict[str, Any] | None:
                done = run_cli("verify", name, "--json", env=env, cwd=tmp_path)
                found: dict[str, Any] = json.loads(done.stdout)
                return found if found["ok"] else None

            report = wait_for(verified, 60, "verify ok with a worker running", interval=0.5)
            worker.signal(signal.SIGTERM)
            assert worker.wait(30) == 0
        assert [c["status"] for c in report["checks"]] == ["ok", "ok", "ok", "ok", "ok"]
        checks = {c["key"]: c for c in report["checks"]}
        assert checks["queue"]["data"]["done"] == 1 and checks["alive"]["data"]["ran"] == 1
        rows = json.loads(run_cli("migrations", "--json", env=env, cwd=tmp_path).stdout)["jobs"]
        row = next(r for r in rows if r["job"] == name)
        assert row["mode"] == "enqueue" and row["done"] == 1 and row["failed"] == 0
        assert next(r for r in rows if r["job"] == "schedule-run")["next_step"].startswith(
            "keep on cron"
        )

        # 9. rollback restores the file byte for byte, and the mode
        cli("rollback", name)
        assert crontab.read_bytes() == original
        spec = load_registry(registry).get(name)
        assert spec.mode == "cron" and spec.migration is None
        tomllib.loads(registry.read_text())

        # a line edited since generation is refused, and nothing changes
        edited = original.replace(b"--limit=250", b"--limit=500")
        crontab.write_bytes(edited)
        registry_before = registry.read_bytes()
        message = cli("migrate", name, "--crontab", "shop.crontab", "--format", "user", code=1)
        assert "changed since the registry was generated" in message
        assert "--limit=250" in message and "--limit=500" in message and "--force" in message
        assert crontab.read_bytes() == edited and registry.read_bytes() == registry_before
    finally:
        store.drop_schema()
        store.dispose()
