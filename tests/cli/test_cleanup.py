"""``migrate-cron cleanup`` from the installed command: what it removes, what it keeps (the
newest scheduled_runs row of every job), and bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store
from tests.conftest import run_cli
from tests.ops.helpers import clocked_store


def finish(store: Store, clock: FakeClock, kind: str, when: datetime, state: str) -> int:
    clock.set(when)
    job_id = store.enqueue(kind, max_attempts=1).job_id
    if state == "cancelled":
        store.cancel([job_id])
        return job_id
    [job] = store.claim("w", 1, kinds=[kind])
    if state == "done":
        store.complete("w", [job.id])
    else:
        store.fail("w", job.id, "boom")
    return job_id


def test_cleanup_removes_old_rows_and_keeps_the_newest_slot(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    with clocked_store(db_url, table_prefix) as (store, clock):
        kept = [
            finish(store, clock, "k", now - timedelta(days=1), "done"),
            finish(store, clock, "k", now - timedelta(days=10), "failed"),
            finish(store, clock, "k", now - timedelta(days=10), "cancelled"),
        ]
        for days in (8, 9, 10):
            finish(store, clock, "k", now - timedelta(days=days), "done")
        finish(store, clock, "k", now - timedelta(days=100), "failed")
        finish(store, clock, "k", now - timedelta(days=100), "cancelled")
        for job_name in ("nightly", "hourly"):
            for day in range(20, 15, -1):
                slot = now - timedelta(days=day)
                clock.set(slot)
                store.enqueue_run(job_name, slot.replace(microsecond=0), outcome="skipped")

        result = run_cli("cleanup", "--json", "--batch", "2", env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {
            "schema_version": 1,
            "done": 3,
            "failed": 1,
            "cancelled": 1,
            "scheduled_runs": 8,
            "workers": 0,
            "actions": 0,
        }
        job, runs = store.tables.job, store.tables.scheduled_runs
        with store.engine.connect() as conn:
            assert sorted(conn.execute(select(job.c.id)).scalars()) == sorted(kept)
            left = conn.execute(select(runs.c.job_name, runs.c.scheduled_for)).all()
        newest = (now - timedelta(days=16)).replace(microsecond=0)
        assert sorted(left) == [("hourly", newest), ("nightly", newest)]

        result = run_cli("cleanup", env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout == (
            "removed 0 done, 0 failed and 0 cancelled job(s), and 0 old scheduled_runs row(s)\n"
        )

        args = ("--done-older-than", "never", "--failed-older-than", "2d", "--json")
        result = run_cli("cleanup", *args, env=env, cwd=tmp_path)
        assert json.loads(result.stdout) == {
            "schema_version": 1,
            "done": 0,
            "failed": 1,
            "cancelled": 1,
            "scheduled_runs": 0,
            "workers": 0,
            "actions": 0,
        }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--done-older-than", "0s"), "--done-older-than: must be longer than 0s"),
        (("--failed-older-than", "a while"), "--failed-older-than: 'a while' is not a duration"),
        (("--batch", "0"), "--batch"),
    ],
)
def test_bad_input_exits_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}"}
    result = run_cli("cleanup", *args, env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
