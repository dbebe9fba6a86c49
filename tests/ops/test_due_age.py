"""The age of the oldest ready job counts from when the work became due (issue 32, item 8).

A cron slot replayed from the spool, or enqueued late for an old slot, has waited since its
slot: ``status --check --max-age`` must fire and ``/metrics`` must say the same age. A retry
counts from when its backoff ended, ``jobs retry`` from when it was asked for, and a follow-up
job (which carries its parent's slot) from when the parent finished — none of those is late
work. The installed ``migrate-cron`` on SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from migrate_cron.store import Store
from tests.cli.test_metrics import scrape
from tests.conftest import run_cli
from tests.fresh_database import later_database
from tests.user_env import user_env

REGISTRY = """
[jobs.hourly]
schedule = "0 * * * *"
timezone = "UTC"
command = "true"
max_attempts = 3
"""
SLOT_AGE = timedelta(hours=2)


def project_env(tmp_path: Path, url: str, prefix: str = "") -> dict[str, str]:
    """The registry with the hourly job, and the settings its crontab line runs with."""
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    spool = str(tmp_path / "spool")
    return user_env(
        MIGRATE_CRON_DATABASE_URL=url,
        MIGRATE_CRON_TABLE_PREFIX=prefix,
        MIGRATE_CRON_REGISTRY=str(registry),
        MIGRATE_CRON_SPOOL=spool,
    )


@pytest.fixture
def env(db_url: str, table_prefix: str, tmp_path: Path, store: Store) -> dict[str, str]:
    return project_env(tmp_path, db_url, table_prefix)


def old_slot(store: Store) -> datetime:
    """An hourly slot about two hours back on the database's clock."""
    return (store.db_now() - SLOT_AGE).replace(minute=0, second=0, microsecond=0)


def status_age(env: dict[str, str], kind: str) -> float:
    result = run_cli("status", "--json", env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    [entry] = [k for k in json.loads(result.stdout)["kinds"] if k["kind"] == kind]
    return float(entry["oldest_ready_age"])


def metric_age(env: dict[str, str], kind: str, cwd: Path) -> float:
    [value] = [
        s.value
        for family in text_string_to_metric_families(scrape(env, cwd))
        for s in family.samples
        if s.name == "migrate_cron_oldest_ready_age_seconds" and s.labels["kind"] == kind
    ]
    return float(value)


def test_a_slot_enqueued_late_is_as_old_as_its_slot(
    env: dict[str, str], store: Store, tmp_path: Path
) -> None:
    slot = old_slot(store)
    result = run_cli("enqueue", "hourly", "--slot", slot.isoformat(), env=env)
    assert result.returncode == 0, result.stderr
    since_slot = (store.db_now() - slot).total_seconds()

    age = status_age(env, "hourly")
    assert since_slot - 60 <= age <= since_slot + 120, (age, since_slot)
    check = run_cli("status", "--check", "--max-age", "10m", env=env, timeout=120)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "CRITICAL max-age: hourly: oldest ready job has waited" in check.stdout
    assert since_slot - 60 <= metric_age(env, "hourly", tmp_path) <= since_slot + 180


@pytest.mark.parametrize("server", ["postgresql", "mariadb"])
def test_a_slot_replayed_from_the_spool_is_as_old_as_its_slot(
    server: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The database is away when cron fires (here: not created yet), so the slot waits in
    the spool; when it is back the slot is replayed, and its job is as old as its slot."""
    request.getfixturevalue("pg_database" if server == "postgresql" else "mariadb_database")
    with later_database(server) as (url, create):
        env = project_env(tmp_path, url)
        slot = (datetime.now(UTC) - SLOT_AGE).replace(minute=0, second=0, microsecond=0)
        spooled = run_cli("enqueue", "hourly", "--slot", slot.isoformat(), env=env)
        assert spooled.returncode == 75, spooled.stderr  # the database is away: spooled
        assert "spooled to" in spooled.stderr

        create()
        upgraded = run_cli("db", "upgrade", env=env, timeout=120)
        assert upgraded.returncode == 0, upgraded.stderr
        flushed = run_cli("spool", "flush", env=env, timeout=60)
        assert flushed.returncode == 0, flushed.stderr
        assert json.loads(run_cli("spool", "list", "--json", env=env).stdout)["count"] == 0

        since_slot = (datetime.now(UTC) - slot).total_seconds()
        assert since_slot - 60 <= status_age(env, "hourly") <= since_slot + 120
        check = run_cli("status", "--check", "--max-age", "10m", env=env, timeout=120)
        assert check.returncode == 1 and "max-age: hourly" in check.stdout, check.stdout
        assert metric_age(env, "hourly", tmp_path) >= since_slot - 60


def test_retries_follow_ups_and_manual_retries_count_from_when_they_became_due(
    env: dict[str, str], store: Store
) -> None:
    slot = old_slot(store)
    # A retry: the first attempt failed, the backoff (0 s here) has ended.
    first = store.enqueue_run("hourly", slot, max_attempts=3)
    [claimed] = store.claim("w", 1, kinds=["hourly"])
    assert claimed.id == first.job_id
    assert store.fail("w", claimed.id, "boom", retry_in=0) == "open"
    assert status_age(env, "hourly") < 120

    # A follow-up job carries its parent's slot, but became due when the parent finished.
    [again] = store.claim("w", 1, kinds=["hourly"])
    assert store.complete("w", [again.id], then={again.id: [("report", 1)]}) == 1
    [child] = store.list_jobs(kind="report")
    assert child.scheduled_for == slot
    assert status_age(env, "report") < 120

    # `jobs retry` of a failed job from an old slot: due when it was asked for.
    second = store.enqueue_run("hourly", slot - timedelta(hours=1), max_attempts=1)
    [claimed] = store.claim("w", 1, kinds=["hourly"])
    assert claimed.id == second.job_id
    assert store.fail("w", claimed.id, "boom") == "failed"
    retried = run_cli("jobs", "retry", str(claimed.id), "--yes", env=env)
    assert retried.returncode == 0, retried.stderr
    assert status_age(env, "hourly") < 120
    check = run_cli("status", "--check", "--max-age", "10m", env=env, timeout=120)
    assert check.returncode == 0, check.stdout

    # ... while a slot's first try given back at shutdown (not counted) is still late work;
    # the retried job given back with it keeps counting from its retry (it holds an error).
    late = store.enqueue_run("hourly", slot + timedelta(hours=1), max_attempts=1)
    claimed = store.claim("w", 5, kinds=["hourly"])
    assert {late.job_id, second.job_id} == {j.id for j in claimed}
    assert store.release("w", [j.id for j in claimed]) == 2
    since_slot = (store.db_now() - (slot + timedelta(hours=1))).total_seconds()
    assert since_slot - 60 <= status_age(env, "hourly") <= since_slot + 120
