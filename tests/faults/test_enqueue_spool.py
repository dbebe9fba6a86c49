"""A database that stalls or is gone at ``enqueue`` time loses no cron run: the slot goes to
the local spool, ``enqueue`` exits 75 within 30 s, and the next ``enqueue`` that reaches the
database replays it (docs/reliability.md, "enqueue while the database is away")."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from migrate_cron.store import Store, open_store
from tests.conftest import run_cli
from tests.faults.proxy import StallingProxy, upstream_of, via_proxy

REGISTRY = '[jobs.export]\ncommand = "true"\nschedule = "*/5 * * * *"\n'


def _env(url: str, prefix: str, tmp_path: Path) -> dict[str, str]:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    return {
        "MIGRATE_CRON_DATABASE_URL": url,
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
        "MIGRATE_CRON_SPOOL": str(tmp_path / "spool"),
    }


def _slots(store: Store) -> list[str]:
    return sorted(str(r["scheduled_for"])[:16] for r in store.runs("export"))


def test_a_stalled_database_spools_the_slot_and_the_next_enqueue_replays_it(
    server_url: str, table_prefix: str, tmp_path: Path
) -> None:
    store = open_store(server_url, prefix=table_prefix)
    store.create_schema()
    try:
        with StallingProxy(*upstream_of(server_url)) as proxy:
            env = _env(via_proxy(server_url, proxy), table_prefix, tmp_path)
            proxy.freeze()
            started = time.monotonic()
            first = run_cli("enqueue", "export", "--slot", "2026-03-01T02:30", env=env, timeout=60)
            took = time.monotonic() - started
            assert first.returncode == 75, first.stderr
            assert took < 30, f"enqueue took {took:.1f}s against a stalled database"
            assert "spooled" in first.stderr and len(first.stderr.strip().splitlines()) == 1
            listed = json.loads(run_cli("spool", "list", "--json", env=env).stdout)
            assert [s["job"] for s in listed["slots"]] == ["export"]
            spooled = Path(listed["slots"][0]["file"])
            assert stat.S_IMODE(os.stat(spooled).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(spooled.parent).st_mode) == 0o700
            assert _slots(store) == []

            proxy.thaw()
            second = run_cli("enqueue", "export", "--slot", "2026-03-01T02:35", env=env, timeout=60)
            assert second.returncode == 0, second.stderr
            assert _slots(store) == ["2026-03-01 02:30", "2026-03-01 02:35"]
            assert store.count_jobs(kind="export") == 2
            assert json.loads(run_cli("spool", "list", "--json", env=env).stdout)["count"] == 0
            for _ in range(2):
                flush = run_cli("spool", "flush", env=env, timeout=60)
                assert flush.returncode == 0, flush.stderr
            assert store.count_jobs(kind="export") == 2
    finally:
        store.drop_schema()
        store.dispose()


def test_a_refused_connection_spools_and_only_its_own_database_takes_it(
    server_url: str, table_prefix: str, tmp_path: Path
) -> None:
    store = open_store(server_url, prefix=table_prefix)
    store.create_schema()
    try:
        proxy = StallingProxy(*upstream_of(server_url))
        url = via_proxy(server_url, proxy)
        proxy.close()  # nothing listens on that port any more: connection refused
        env = _env(url, table_prefix, tmp_path)
        down = run_cli("enqueue", "export", "--slot", "2026-03-01T02:30", env=env, timeout=60)
        assert down.returncode == 75, down.stderr
        # The spool belongs to the database it was meant for: another URL does not take it.
        entries = json.loads(run_cli("spool", "list", "--json", env=env).stdout)["slots"]
        assert len(entries) == 1 and entries[0]["slot"].startswith("2026-03-01T02:30")
        real = {**env, "MIGRATE_CRON_DATABASE_URL": server_url}
        assert json.loads(run_cli("spool", "flush", "--json", env=real).stdout)["flushed"] == []
    finally:
        store.drop_schema()
        store.dispose()
