"""Killed workers: SIGKILL a random worker every few hundred ms and start a new one, while
thousands of jobs run. Nothing is lost, nothing is left running, and every repeated run is
paid for by a kill.

The bound we assert, and why: a worker holds at most ``capacity`` unfinished jobs
(claimed or running: ``concurrency + 2 × batch`` when batches wait beside the threads, see
``ClaimSize.capacity``), and its ledger at most twice that counting runs finished but not
yet written (``Ledger.room``). Only a job that a worker held when it died can run again, so

    extra runs  =  Σ over jobs (runs − 1)  ≤  kills × 2 × capacity.

(An earlier version asserted ``kills × max(concurrency, batch)``, below what the worker may
hold: it failed under load, when the finisher's writes lag, with 182 extra runs for 20
kills against a claimed bound of 160.)

Stronger, per run: every run of a job except its last was started by a worker we killed.
(The lease is 10 heartbeats long, so a living worker never loses a lease to slowness here.)
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from migrate_cron.store import Store
from migrate_cron.worker.claim_size import ClaimSize
from tests.faults.procs import (
    Fleet,
    Proc,
    cli_env,
    pacing,
    read_results,
    wait_for,
    write_handler_project,
)

WORKERS = 4
CONCURRENCY = 4
BATCH = 8
CAPACITY = ClaimSize(CONCURRENCY, BATCH).capacity  # concurrency + 2 x batch (test_claim_size)
HELD = 2 * CAPACITY  # unfinished jobs plus runs finished but not yet written
WORKER_ARGS = [
    "worker",
    "--concurrency",
    str(CONCURRENCY),
    "--batch",
    str(BATCH),
    "--heartbeat",
    "0.5",
    "--lease",
    "5",
    "--poll",
    "0.2",
    "--grace",
    "5",
]
REGISTRY = '[jobs.chaos]\nhandler = "chaos_jobs:record"\nmax_attempts = 100\n'


def _holding(store: Store, pid: int) -> int:
    """How many rows the (dead) worker ``pid`` still holds as running."""
    return sum(
        1
        for j in store.list_jobs(state="running", limit=100_000)
        if j.locked_by and j.locked_by.rsplit(":", 2)[1] == str(pid)
    )


def _ready(proc: Proc) -> bool:
    return "worker-start" in proc.output()


def run_chaos(
    store: Store,
    db_url: str,
    table_prefix: str,
    tmp_path: Path,
    *,
    jobs: int,
    min_kills: int,
    job_ms: int,
    until_drained: bool = False,
) -> None:
    registry = write_handler_project(tmp_path / "project", REGISTRY)
    results = tmp_path / "results.txt"
    env = cli_env(db_url, table_prefix, registry, MCT_RESULTS=str(results))

    def add_jobs(n: int) -> None:
        payloads = [{"ms": random.randint(0, job_ms)} for _ in range(n)]
        store.enqueue_many("chaos", payloads, max_attempts=100)

    add_jobs(jobs)
    total = jobs
    top_ups = 0
    killed_pids: set[int] = set()
    kills_in_flight = 0
    t0 = time.monotonic()
    with Fleet(tmp_path) as fleet:
        workers = [
            fleet.start(WORKER_ARGS, env, label="worker", cwd=registry.parent)
            for _ in range(WORKERS)
        ]
        # The chaos loop: kill a random worker that is up and holds jobs, start a new one,
        # pause, repeat — until enough kills have hit working workers (or the queue is dry).
        while until_drained or kills_in_flight < min_kills:
            if store.count_jobs(states=["open", "running"]) == 0:
                if until_drained or top_ups >= 10:
                    break
                # The machine ran the queue dry before enough kills landed (a fast or idle
                # machine): give the chaos more work instead of failing on the harness's pace.
                add_jobs(jobs // 2)
                total += jobs // 2
                top_ups += 1
            up = wait_for(
                lambda: [w for w in workers if w.alive() and _ready(w)], 60, "a worker up"
            )
            working = [w for w in up if _holding(store, w.pid)]
            if not working:
                pacing(0.05, 0.1)
                continue
            victim = random.choice(working)
            victim.signal(signal.SIGKILL)
            victim.wait(10)
            killed_pids.add(victim.pid)
            kills_in_flight += _holding(store, victim.pid) > 0
            workers.remove(victim)
            workers.append(fleet.start(WORKER_ARGS, env, label="worker", cwd=registry.parent))
            pacing(0.1, 0.3)
        chaos_seconds = time.monotonic() - t0
        wait_for(
            lambda: store.count_jobs(states=["open", "running"]) == 0,
            180,
            "the queue to drain after the chaos",
            interval=0.2,
        )
        drained = time.monotonic() - t0 - chaos_seconds
        for w in workers:
            w.signal(signal.SIGTERM)
        for w in workers:
            assert w.wait(30) == 0, w.output()[-2000:]
    kills = len(killed_pids)
    runs = read_results(results)
    per_job = Counter(job_id for job_id, _ in runs)
    ids = {j.id for j in store.list_jobs(kind="chaos", limit=total + 10)}
    extra = sum(n - 1 for n in per_job.values())
    print(
        f"{store.family}: {total} jobs, {kills} kills ({kills_in_flight} holding jobs) in "
        f"{chaos_seconds:.1f}s, {len(runs)} runs, {extra} extra runs "
        f"(bound {kills} × {HELD} = {kills * HELD}), lost {len(ids - set(per_job))}, left "
        f"running {store.count_jobs(states=['running'])}, queue drained {drained:.1f}s after "
        f"the last kill, total {time.monotonic() - t0:.1f}s"
    )
    assert kills_in_flight >= min(min_kills, 1), "no kill hit a worker holding jobs"
    # Nothing lost: every job ran at least once and is done; nothing is left running.
    assert len(ids) == total
    assert set(per_job) == ids
    assert store.count_jobs(states=["done"]) == total
    assert store.count_jobs(states=["open", "running", "failed", "cancelled"]) == 0
    # Bounded repeats, and each repeat paid for by a kill.
    assert extra <= kills * HELD
    runs_by_job: dict[int, list[int]] = defaultdict(list)
    for job_id, pid in runs:
        runs_by_job[job_id].append(pid)
    for job_id, pids in runs_by_job.items():
        assert all(pid in killed_pids for pid in pids[:-1]), (
            f"job {job_id} ran {len(pids)} times; an earlier run was by a living worker: {pids}"
        )
    assert extra > 0 or kills_in_flight == 0  # the kills really interrupted work


@pytest.mark.slow
def test_sigkilled_workers_lose_nothing_and_repeat_at_most_the_jobs_they_held(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """CI variant: a few thousand jobs per backend, at least 20 kills that hit working
    workers."""
    run_chaos(store, db_url, table_prefix, tmp_path, jobs=1500, min_kills=20, job_ms=20)


@pytest.mark.chaos_long
def test_chaos_long_ten_thousand_jobs(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """The long variant of the issue: 10,000 jobs, kills until the queue is empty."""
    run_chaos(
        store,
        db_url,
        table_prefix,
        tmp_path,
        jobs=10_000,
        min_kills=20,
        job_ms=20,
        until_drained=True,
    )
