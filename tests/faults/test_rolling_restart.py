"""Graceful deploys: a rolling restart — SIGTERM to each worker in turn while jobs run, a new
worker started in its place — finishes or releases every job. Nothing is left running,
nothing is lost, no attempt is spent by the restart, and only jobs the restart interrupted
run again.

What SIGTERM does (``worker/loop.py``): stop claiming; jobs claimed but not started go back
at once; running jobs get ``--grace`` seconds; what still runs after that is stopped (its
process group gets SIGTERM, then SIGKILL) and released — back to ``open`` at once with the
attempt not counted; then the worker exits 0.
"""

from __future__ import annotations

import os
import re
import signal
from collections import Counter
from pathlib import Path

import pytest

from migrate_cron.store import Store
from tests.faults.procs import Fleet, Proc, cli_env, wait_for

JOBS = 120
LONG_EVERY = 4  # job ids divisible by this run 2.5 s, longer than the grace: stopped, released
GRACE = 1.0
REGISTRY = """\
[jobs.deploy]
command = '''echo "start $MIGRATE_CRON_JOB_ID" >> "$RUNS"; \
if [ $((MIGRATE_CRON_JOB_ID % {long})) -eq 0 ]; then sleep 2.5; \
else sleep 0.$((MIGRATE_CRON_JOB_ID % 5)); fi; \
echo "end $MIGRATE_CRON_JOB_ID" >> "$RUNS"'''
env = {{ RUNS = "{runs}" }}
max_attempts = 3
"""
WORKER_ARGS = [
    "worker",
    "--concurrency",
    "2",
    "--heartbeat",
    "1",
    # A lease well above the heartbeat: this test is about SIGTERM, not about lease expiry
    # (with the default 3 s lease, one CI run under full load once saw a lease lapse).
    "--lease",
    "10",
    "--poll",
    "0.2",
    "--grace",
    str(GRACE),
]


def _running_long(store: Store, pid: int) -> bool:
    """The worker ``pid`` runs a long job that started less than a second ago (so it will
    still run when the grace ends)."""
    now = store.db_now()
    return any(
        j.id % LONG_EVERY == 0
        and j.locked_by
        and j.locked_by.rsplit(":", 2)[1] == str(pid)
        and j.started_at is not None
        and (now - j.started_at.replace(tzinfo=now.tzinfo)).total_seconds() < 1.0
        for j in store.list_jobs(state="running", limit=1000)
    )


def _why(store: Store, job_ids: list[int], workers: list[Proc]) -> str:
    """What happened to jobs whose attempt was spent: their runs and every log line that
    names them, so a failure under load says which path counted the attempt."""
    report = []
    for job_id in job_ids:
        job = store.get(job_id)
        if job is not None:
            report.append(f"job {job_id}: attempts={job.attempts} error={job.last_error}")
        report += [f"  run {a.started_at} {a.outcome} {a.error}" for a in store.attempts(job_id)]
        for w in workers:
            report += [
                f"  pid {w.pid}: {line}"
                for line in w.output().splitlines()
                if re.search(rf"\b(id|job)[= ]{job_id}\b", line) or "lease" in line
            ]
    return "\n".join(report)


def _stopped(proc: Proc) -> int:
    """Running jobs the worker said it stopped after the grace."""
    return sum(int(n) for n in re.findall(r"stopping (\d+) running job", proc.output()))


@pytest.mark.slow
def test_rolling_restart_finishes_or_releases_every_job(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    runs_log = tmp_path / "runs.log"
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY.format(long=LONG_EVERY, runs=runs_log))
    env = cli_env(db_url, table_prefix, registry)
    ids = [store.enqueue("deploy").job_id for _ in range(JOBS)]
    restarted: list[Proc] = []
    with Fleet(tmp_path) as fleet:
        workers = [fleet.start(WORKER_ARGS, env, label="worker") for _ in range(4)]
        originals = list(workers)
        for _ in range(4):
            # Restart an old worker while it runs a job longer than the grace, so every
            # restart takes the release path too.
            old = [w for w in originals if w not in restarted]
            victim = wait_for(
                lambda old=old: next((w for w in old if _running_long(store, w.pid)), None),
                60,
                "an old worker running a long job",
            )
            victim.signal(signal.SIGTERM)
            assert victim.wait(GRACE + 20) == 0, victim.output()[-3000:]
            restarted.append(victim)
            workers.append(fleet.start(WORKER_ARGS, env, label="worker"))
        wait_for(
            lambda: store.count_jobs(states=["open", "running"]) == 0,
            120,
            "the queue to drain",
            interval=0.2,
        )
        for w in workers:
            if w in restarted:
                continue
            w.signal(signal.SIGTERM)
            assert w.wait(30) == 0, w.output()[-3000:]
    stopped = sum(_stopped(p) for p in restarted)
    lines = runs_log.read_text().split("\n")
    starts = Counter(int(x.split()[1]) for x in lines if x.startswith("start "))
    ends = Counter(int(x.split()[1]) for x in lines if x.startswith("end "))
    print(f"{store.family}: {JOBS} jobs, 4 restarts, {stopped} running jobs stopped and released")
    for p in restarted:
        out = p.output()
        assert "worker-stop" in out and "Traceback" not in out, out[-3000:]
    # The restarts were aimed at workers running a long job; at least one must have had to
    # stop and release one (how many depends on the machine's pace, not on a guarantee).
    assert stopped >= 1
    # Nothing lost, nothing left running, no attempt spent by a restart.
    assert store.count_jobs(states=["done"]) == JOBS
    assert store.count_jobs(states=["open", "running", "failed", "cancelled"]) == 0
    spent = [i for i in ids if store.get(i).attempts != 1]  # type: ignore[union-attr]
    assert not spent, _why(store, spent, workers)
    assert set(ends) == set(ids), "a job never finished its command"
    # Only the runs the restarts stopped were interrupted and repeated.
    interrupted = sum(starts[i] - ends[i] for i in ids)
    assert 0 < interrupted <= stopped
    assert sum(n - 1 for n in ends.values()) <= stopped  # (a stop landing after "end")


@pytest.mark.slow
def test_a_command_stopped_together_with_its_worker_is_released_not_failed(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """systemd's default ``KillMode=control-group`` sends SIGTERM to every process of the unit
    at once: the command may die of it before the worker has handled its own. That run was
    stopped by the deploy, not by its fault, so it must not spend an attempt."""
    pid_file = tmp_path / "pid"
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        f"[jobs.long]\ncommand = 'echo $$ > \"{pid_file}\"; exec sleep 60'\nmax_attempts = 3\n"
    )
    env = cli_env(db_url, table_prefix, registry)
    job_id = store.enqueue("long").job_id
    with Fleet(tmp_path) as fleet:
        worker = fleet.start([*WORKER_ARGS[:-2], "--grace", "30"], env, label="worker")
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 60, "the command")
        os.kill(int(pid_file.read_text()), signal.SIGTERM)  # the command first, then the worker
        worker.signal(signal.SIGTERM)
        assert worker.wait(30) == 0, worker.output()[-3000:]
    job = store.get(job_id)
    assert job is not None
    assert (job.state, job.attempts) == ("open", 0), worker.output()[-3000:]
    assert "outcome=released" in worker.output()
