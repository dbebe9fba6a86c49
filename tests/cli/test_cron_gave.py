"""What cron gave that the queue gives too, through the installed command on SQLite,
PostgreSQL and MariaDB: run a job now, pause and resume a kind (the scheduler applying each
missed-run policy to the pause), pause the scheduler, and a two-step chain."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from migrate_cron.store import Store
from tests.conftest import run_cli
from tests.scheduler.test_processes import env_for, start, stop_all
from tests.worker.helpers import spawn_cli_worker, stop_process, wait_for

REGISTRY = """
[jobs.fix-data]
command = "echo fixed"
max_attempts = 2

[jobs.broken]
command = "echo nope >&2; exit 4"
max_attempts = 1

[jobs.extract]
command = "echo extracted"
on_success = ["load"]
on_failure = ["alert"]

[jobs.load]
command = "echo loaded"

[jobs.alert]
command = "echo alerted"

[jobs.extract-bad]
command = "exit 1"
max_attempts = 1
on_success = ["load"]
on_failure = ["alert"]
"""


def wait_until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    wait_for(condition, timeout, 0.2, what)


@pytest.fixture
def env(tmp_path: Path, db_url: str, table_prefix: str, store: Store) -> dict[str, str]:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    return env_for(db_url, table_prefix, registry)


@pytest.fixture
def worker(tmp_path: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    proc, _log = spawn_cli_worker("--poll", "0.2", cwd=tmp_path, env=env)
    try:
        yield proc
    finally:
        stop_process(proc)


def test_jobs_run_waits_and_says_how_it_went(
    env: dict[str, str], store: Store, worker: subprocess.Popen[str]
) -> None:
    ok = run_cli("jobs", "run", "fix-data", "--payload", '{"order": 7}', "--wait", env=env)
    assert ok.returncode == 0, ok.stderr
    assert "done after 1 attempt" in ok.stderr
    (job,) = store.list_jobs(kind="fix-data")
    assert (job.state, job.payload, job.max_attempts) == ("done", {"order": 7}, 2)
    bad = run_cli("jobs", "run", "broken", "--wait", "--json", env=env)
    assert bad.returncode == 1
    assert '"state": "failed"' in bad.stdout and "exit code 4" in bad.stdout
    unknown = run_cli("jobs", "run", "nope", env=env)
    assert unknown.returncode != 0 and "no job 'nope'" in unknown.stderr


def test_a_paused_kind_waits_and_runs_on_resume(
    env: dict[str, str], store: Store, worker: subprocess.Popen[str]
) -> None:
    paused = run_cli("pause", "fix-data", env=env)
    assert paused.returncode == 0 and "paused fix-data" in paused.stderr
    assert "already paused" in run_cli("pause", "fix-data", env=env).stderr
    time.sleep(2.5)  # the worker reads pauses every 2 s
    job_id = store.enqueue("fix-data").job_id
    other = store.enqueue("load").job_id
    wait_until(lambda: store.get(other).state == "done", 20, "an unpaused kind to run")
    time.sleep(1.0)
    assert store.get(job_id).state == "open"
    assert run_cli("resume", "fix-data", env=env).returncode == 0
    wait_until(lambda: store.get(job_id).state == "done", 20, "the resumed kind to run")
    assert store.paused() == {}


def test_a_chain_enqueues_the_next_step_with_the_outcome(
    env: dict[str, str], store: Store, worker: subprocess.Popen[str]
) -> None:
    slot = datetime(2026, 12, 3, 2, 30, tzinfo=UTC)
    parent = store.enqueue_run("extract", slot).job_id
    bad = store.enqueue("extract-bad", max_attempts=1).job_id
    wait_until(
        lambda: len(store.list_jobs(kind="load")) == 1 and len(store.list_jobs(kind="alert")) == 1,
        30,
        "both chains to fire",
    )
    (load,) = store.list_jobs(kind="load")
    assert load.ref == f"after:{parent}" and load.scheduled_for == slot
    assert load.payload == {"after": "extract", "job_id": parent, "outcome": "done"}
    (alert,) = store.list_jobs(kind="alert")
    assert alert.ref == f"after:{bad}" and alert.payload["outcome"] == "failed"
    wait_until(
        lambda: {j.state for j in store.list_jobs(limit=100)} <= {"done", "failed"}, 30, "all"
    )
    # A replayed outcome cannot enqueue the next step twice: the ref is taken.
    assert not store.enqueue("load", ref=f"after:{parent}").created


@pytest.mark.parametrize(
    ("policy", "expect"),
    [("skip", "skipped"), ("run-once", "one"), ("backfill", "all")],
)
def test_resume_applies_the_missed_run_policy_to_the_pause(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store, policy: str, expect: str
) -> None:
    """Every minute on a clock 60 times faster: pause the job for a few minutes, resume,
    and the slots missed meanwhile are handled like a downtime's."""
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        '[jobs.tick]\ncommand = "true"\nschedule = "* * * * *"\nmode = "scheduler"\n'
        f'policy = "{policy}"\nmisfire_grace = 5\nmax_backfill = 100\n'
    )
    env = env_for(db_url, table_prefix, registry)
    start_at = datetime.now(UTC).replace(microsecond=0)
    sched = start(
        ["scheduler", "--now", start_at.isoformat(), "--speed", "60",
         "--until", (start_at + timedelta(minutes=40)).isoformat()],
        env,
    )  # fmt: skip
    try:
        wait_until(lambda: len(store.runs("tick")) >= 2, 30, "the first slots")
        assert run_cli("pause", "tick", env=env).returncode == 0
        time.sleep(1.5)  # the scheduler sees the pause at its next slot
        during = len(store.runs("tick"))
        time.sleep(6)  # six compressed minutes
        assert len(store.runs("tick")) == during, "a paused job got slots"
        assert run_cli("resume", "tick", env=env).returncode == 0
        wait_until(lambda: len(store.runs("tick")) >= during + 6, 30, "slots after the resume")
        # One more slot: a tick logs after its rows commit, so only a later tick's row says
        # the catch-up tick's lines are written (killed in between, its log would be short).
        seen = len(store.runs("tick", limit=1000))
        wait_until(lambda: len(store.runs("tick", limit=1000)) > seen, 30, "a later tick")
    finally:
        stop_all([sched])
    runs = sorted(store.runs("tick", limit=1000), key=lambda r: r["scheduled_for"])
    slots = [r["scheduled_for"] for r in runs]
    assert slots == [slots[0] + timedelta(minutes=i) for i in range(len(slots))], "a gap"
    # The slots missed during the pause are all recorded by the first tick after the resume
    # (one statement for the skipped ones: the same moment, give or take a loaded server).
    batch_at = runs[during]["enqueued_at"]
    batch = [r for r in runs[during:] if abs((r["enqueued_at"] - batch_at).total_seconds()) < 0.5]
    assert len(batch) >= 4, runs[during:]
    # What became of them, up to the first slot enqueued: the catch-up's own (run-once), or the
    # one on time at the resume (skip). Not by the clock: on a loaded machine the enqueue can
    # come more than half a second after the skipped rows of the same tick.
    after = [r["outcome"] for r in runs[during:]]
    caught = after[: after.index("enqueued") + 1] if "enqueued" in after else after
    log = sched.stderr.read() if sched.stderr else ""
    said = f"{after}\n--- the scheduler's log ---\n{log}"  # whole, where pytest would cut it
    if expect == "skipped":  # a late on-time slot may be skipped too (misfire_grace at 60x)
        assert len(caught) >= 5 and caught.count("skipped") >= len(caught) - 1, said
        assert "catch-up" not in log, said
    elif expect == "one":
        assert len(caught) >= 5 and caught.count("skipped") == len(caught) - 1, said
        assert caught[-1] == "enqueued", said
        assert "catch-up" in log and "coalesced" in log, said
    else:
        assert set(after) == {"enqueued"} and len(batch) >= 5, after


def test_scheduler_pause_records_nothing_until_resume(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store
) -> None:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        '[jobs.tick]\ncommand = "true"\nschedule = "* * * * *"\nmode = "scheduler"\n'
    )
    env = env_for(db_url, table_prefix, registry)
    paused = run_cli("scheduler", "pause", env=env)
    assert paused.returncode == 0 and "paused the scheduler" in paused.stderr
    start_at = datetime.now(UTC).replace(microsecond=0)
    sched = start(["scheduler", "--now", start_at.isoformat(), "--speed", "60"], env)
    try:
        time.sleep(4)
        assert store.runs("tick") == []
        assert run_cli("scheduler", "resume", env=env).returncode == 0
        wait_until(lambda: len(store.runs("tick")) >= 2, 30, "slots after the resume")
    finally:
        stop_all([sched])
    out = sched.stderr.read() if sched.stderr else ""
    assert "paused" in out and "resumed" in out, out
