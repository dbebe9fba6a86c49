"""``concurrency = N`` over several worker processes and ``overlap = "skip"`` under the
scheduler: measured by the jobs themselves (each appends its start and stop time), on SQLite,
PostgreSQL and MariaDB, through the installed command."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from migrate_cron.store import Store
from tests.scheduler.test_processes import env_for, start, stop_all
from tests.worker.helpers import spawn_cli_worker, stop_process, wait_for

# Each run appends "start <t>" then "stop <t>" (seconds, nanosecond clock) to the log.
COMMAND = "echo start $(date +%s.%N) >> {log}; sleep {sleep}; echo stop $(date +%s.%N) >> {log}"


def most_at_once(log: Path) -> tuple[int, int]:
    """The largest number of runs in progress at one instant, and how many runs ended."""
    events = []
    for line in log.read_text().splitlines():
        word, stamp = line.split()
        events.append((float(stamp), 1 if word == "start" else -1))
    events.sort(key=lambda e: (e[0], e[1]))  # a stop at the same instant as a start first
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak, sum(1 for _, step in events if step < 0)


def wait_until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    wait_for(condition, timeout, 0.2, what)


@pytest.mark.parametrize("limit", [1, 2])
def test_three_workers_never_run_more_than_the_limit(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store, limit: int
) -> None:
    log = tmp_path / "runs.log"
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        f'[jobs.limited]\ncommand = "{COMMAND.format(log=log, sleep=0.5)}"\nconcurrency = {limit}\n'
    )
    for i in range(8):
        store.enqueue("limited", {"n": i})
    env = env_for(db_url, table_prefix, registry)
    procs = [
        spawn_cli_worker("--concurrency", "4", "--poll", "0.2", cwd=tmp_path, env=env)[0]
        for _ in range(3)
    ]
    try:
        wait_until(lambda: store.count_jobs(states=["done"]) == 8, 90, "8 jobs done by 3 workers")
    finally:
        for proc in procs:
            stop_process(proc)
    peak, runs = most_at_once(log)
    assert runs == 8
    assert peak <= limit, f"{peak} runs at once with concurrency = {limit}"
    if limit == 2:
        assert peak == 2  # the limit is a limit, not a serialisation


def test_overlap_skip_records_slots_due_while_the_job_still_runs(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store
) -> None:
    """A 3-minute job every minute, on a clock 60 times faster: the slots that come due
    while it runs are recorded as skipped (cron + ``flock -n`` did the same)."""
    log = tmp_path / "runs.log"
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        "[jobs.slow]\n"
        f'command = "{COMMAND.format(log=log, sleep=3)}"\n'
        'schedule = "* * * * *"\nmode = "scheduler"\nconcurrency = 1\noverlap = "skip"\n'
    )
    env = env_for(db_url, table_prefix, registry)
    start_at = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    until = start_at + timedelta(minutes=12)
    worker = spawn_cli_worker("--poll", "0.1", cwd=tmp_path, env=env)[0]
    scheduler = start(
        [
            "scheduler",
            "--now",
            (start_at - timedelta(seconds=1)).isoformat(),
            "--until",
            until.isoformat(),
            "--speed",
            "60",
        ],
        env,
    )
    try:
        _out, err = scheduler.communicate(timeout=120)
        assert scheduler.returncode == 0, err
        wait_until(
            lambda: store.count_jobs(states=["open", "running"]) == 0, 30, "the last run to end"
        )
    finally:
        stop_all([scheduler])
        stop_process(worker)
    runs = store.runs("slow", limit=1000)
    outcomes = [r["outcome"] for r in runs]
    slots = sorted(r["scheduled_for"] for r in runs)
    # Every minute from the scheduler's first tick (its start-up takes a compressed minute
    # or two) to --until is recorded once, enqueued or skipped: no gap, nothing twice.
    assert len(slots) >= 9, slots
    assert slots == [slots[0] + timedelta(minutes=i) for i in range(len(slots))], slots
    assert outcomes.count("skipped") >= 4, outcomes
    assert outcomes.count("enqueued") >= 2, outcomes
    peak, ended = most_at_once(log)
    assert peak == 1
    assert ended == outcomes.count("enqueued")
    assert "overlap" in err, err
