"""The page read models that need no database: workers grouped from their running jobs,
output tails, policy words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from migrate_cron.registry import JobSpec
from migrate_cron.store.models import Job
from migrate_cron.web.pages import POLICY_WORDS, ScheduleRow, output_tail
from migrate_cron.web.worker_board import group_workers

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def running(job_id: int, worker: str | None, lease_left: float | None) -> Job:
    until = NOW + timedelta(seconds=lease_left) if lease_left is not None else None
    return Job(
        id=job_id, kind="k", ref=None, payload=None, state="running", attempts=1,
        max_attempts=5, run_at=NOW, scheduled_for=None, locked_by=worker, locked_until=until,
        last_error=None, output=None, created_at=NOW, started_at=NOW, finished_at=None,
    )  # fmt: skip


def test_a_worker_is_alive_while_its_newest_lease_runs() -> None:
    rows = group_workers([running(3, "b:1", -5), running(1, "a:1", 20), running(2, "a:1", -3)], NOW)
    assert [(r.name, [j.id for j in r.jobs], r.lease_left, r.alive) for r in rows] == [
        ("a:1", [1, 2], 20.0, True),
        ("b:1", [3], -5.0, False),
    ]
    (unknown,) = group_workers([running(4, None, None)], NOW)
    assert unknown.name == "(unknown)" and not unknown.alive


def test_output_tail_keeps_the_last_lines() -> None:
    assert output_tail("a\nb\nc\n", 2) == "b\nc"
    assert output_tail(None) == ""


def test_every_policy_has_words() -> None:
    for policy in ("skip", "run-once", "backfill"):
        assert policy in POLICY_WORDS
    row = ScheduleRow(
        JobSpec("x", policy="backfill", max_backfill=4), [], None, None, None, None, None
    )
    assert row.policy_words.endswith("(4)")
