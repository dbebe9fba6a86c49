"""Cleanup as a registry job: the documented snippet, run by the real worker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from migrate_cron.ops.cleanup import retention
from tests.conftest import run_cli
from tests.ops.helpers import clocked_store, run_one

SNIPPET = """
[jobs.migrate-cron-cleanup]
schedule = "17 3 * * *"
handler = "migrate_cron.ops.cleanup:cleanup_job"
mode = "scheduler"
policy = "skip"
timeout = 3600
max_attempts = 3
"""


def test_retention_defaults_and_payload() -> None:
    assert retention(None) == (7 * 86400, 90 * 86400, 1000)
    assert retention({"done_older_than": "1d", "failed_older_than": "never", "batch": 50}) == (
        86400,
        None,
        50,
    )
    with pytest.raises(ValueError, match="unknown cleanup option"):
        retention({"keep": "1d"})
    with pytest.raises(ValueError, match="done_older_than"):
        retention({"done_older_than": "0s"})
    with pytest.raises(Exception, match="not a duration"):
        retention({"failed_older_than": "soon"})


def test_the_registry_snippet_runs_cleanup_in_the_worker(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    (tmp_path / "migrate-cron.toml").write_text(SNIPPET)
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    now = datetime.now(UTC)
    with clocked_store(db_url, table_prefix) as (store, clock):
        old = [run_one(store, clock, "report", now - timedelta(days=d), 5) for d in (3, 4)]
        fresh = run_one(store, clock, "report", now - timedelta(hours=2), 5)
        clock.set(now)
        job_id = store.enqueue("migrate-cron-cleanup", {"done_older_than": "1d"}).job_id

        result = run_cli("worker", "--once", "--poll", "0.1", env=env, cwd=tmp_path, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr

        job = store.get(job_id)
        assert job is not None and job.state == "done", job
        assert job.output == (
            "removed 2 done, 0 failed and 0 cancelled job(s), and 0 old scheduled_runs row(s)"
        )
        table = store.tables.job
        with store.engine.connect() as conn:
            left = set(conn.execute(select(table.c.id)).scalars())
    assert not left & set(old)
    assert {fresh, job_id} <= left
