"""The claim batch: fixed with ``--batch``, else learnt from run times — and long jobs are
not hoarded by a worker that learnt short ones (installed command, every backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate_cron.store import Store
from migrate_cron.worker.claim_size import CEILING, MIN_RUNS, ClaimPlan, ClaimSize
from tests.scheduler.test_processes import env_for
from tests.worker.helpers import spawn_cli_worker, stop_process, wait_for


def test_unknown_run_times_claim_only_what_the_threads_start() -> None:
    size = ClaimSize(4)
    assert (size.batch, size.capacity, size.refill_at) == (4, 4, 2)
    assert size.plan(room=4, free=4, claimable=["a"]) == ClaimPlan(4, 0, ())


def test_short_runs_grow_the_batch_up_to_the_ceiling() -> None:
    size = ClaimSize(4)
    for _ in range(MIN_RUNS - 1):
        size.observe("tiny", 0.001)
    assert size.batch == 4  # not seen often enough yet
    size.observe("tiny", 0.001)
    assert size.batch == CEILING
    assert size.capacity == 4 + 2 * CEILING and size.refill_at == CEILING
    middling = ClaimSize(4)
    for _ in range(MIN_RUNS):
        middling.observe("m", 0.05)
    assert middling.averages["m"] == 0.05
    # One waiting batch drains within 0.25 s: 4 threads x 0.25 s / 0.05 s = 20 jobs.
    assert middling.batch == 20
    middling.observe("tiny", 0.001)  # the slowest short kind sets the size
    assert middling.batch == 20


def test_one_long_run_brings_its_kind_back_at_once() -> None:
    size = ClaimSize(4)
    for _ in range(MIN_RUNS):
        size.observe("k", 0.001)
    assert size.short_kinds() == ("k",)
    size.observe("k", 30.0)  # a longer run replaces the average at once
    assert size.short_kinds() == () and size.batch == 4 and size.capacity == 4


def test_a_kind_that_is_sometimes_long_stays_long() -> None:
    """Three quick runs (0.1 s) for every 2.5 s one: never claimed ahead of the threads."""
    size = ClaimSize(2)
    for n in range(400):
        size.observe("report", 2.5 if n % 4 == 0 else 0.1)
        assert size.short_kinds() == (), n
    for _ in range(60):  # it became quick for good: claimed ahead
        size.observe("report", 0.1)
    assert size.short_kinds() == ("report",)


def test_only_short_kinds_are_claimed_ahead_of_the_threads() -> None:
    size = ClaimSize(2)
    for _ in range(MIN_RUNS):
        size.observe("tiny", 0.001)
        size.observe("long", 30.0)
    # Threads free: claim for them from any kind, the rest ahead from the short kinds only.
    assert size.plan(room=102, free=2, claimable=["long", "new", "tiny"]) == ClaimPlan(
        2, 98, ("tiny",)
    )
    # Every thread busy: only short jobs are taken, to wait in the batch.
    assert size.plan(room=60, free=0, claimable=["long", "tiny"]) == ClaimPlan(0, 60, ("tiny",))
    # Every claimable kind is short: one claim of any of them.
    assert size.plan(room=50, free=1, claimable=["tiny"]) == ClaimPlan(50, 0, ())
    # A short kind this worker does not claim (--kinds) is never claimed ahead.
    assert size.plan(room=50, free=1, claimable=["long"]) == ClaimPlan(1, 0, ())


def test_a_fixed_batch_never_changes_and_claims_any_kind() -> None:
    size = ClaimSize(2, batch=50)
    for seconds in (0.001, 40.0, 0.0):
        size.observe("k", seconds)
    assert (size.batch, size.capacity, size.refill_at) == (50, 102, 50)
    assert size.plan(room=102, free=0, claimable=["k"]) == ClaimPlan(50, 0, ())
    assert ClaimSize(4, batch=2).capacity == 4 and ClaimSize(4, batch=2).refill_at == 1
    assert ClaimSize(4, batch=None).adaptive and not ClaimSize(4, batch=8).adaptive


def test_zero_length_runs_do_not_divide_by_zero() -> None:
    size = ClaimSize(1, min_runs=1)
    size.observe("k", 0.0)
    assert size.batch == CEILING
    size.observe("k", -1.0)  # a clock step back counts as zero
    assert size.batch == CEILING


QUICK = 3 * MIN_RUNS  # enough for both workers to learn that "quick" is quick


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_long_jobs_go_one_per_worker_with_the_default_batch(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store
) -> None:
    """Two single-thread workers with default flags first learn that jobs take milliseconds,
    then two 3-second jobs become ready: each worker runs one of them, at the same time.

    On the server backends only: workers on several hosts share PostgreSQL or MariaDB; two
    worker processes on one SQLite file take ~0.6 s a job here (the file lock), too slow to
    learn 50 runs each within a test's time. The sizing itself is the same code, tested
    above without a database."""
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text('[jobs.quick]\ncommand = "true"\n\n[jobs.slow]\ncommand = "sleep 3"\n')
    for i in range(QUICK):
        store.enqueue("quick", {"n": i})
    env = env_for(db_url, table_prefix, registry)
    procs = [
        spawn_cli_worker("--concurrency", "1", "--poll", "0.2", cwd=tmp_path, env=env)[0]
        for _ in range(2)
    ]
    try:
        wait_for(
            lambda: store.count_jobs(states=["done"]) == QUICK, 120, 0.2, "the quick jobs done"
        )
        slow = [store.enqueue("slow", {"n": i}).job_id for i in range(2)]
        done = QUICK + 2
        wait_for(lambda: store.count_jobs(states=["done"]) == done, 60, 0.2, "the slow jobs done")
    finally:
        for proc in procs:
            stop_process(proc)
    workers = {store.attempts(job_id)[0].worker for job_id in slow}
    assert len(workers) == 2, workers  # one each, not both queued behind one thread
    runs = [store.attempts(job_id)[0] for job_id in slow]
    first, second = sorted(runs, key=lambda a: a.started_at)
    assert second.started_at < first.finished_at  # they overlapped: nobody waited
