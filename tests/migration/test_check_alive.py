"""The liveness check of verify (a scheduler and a worker serve the job), on plain values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.migration.check import FAIL, OK, SKIPPED, WAITING
from migrate_cron.migration.check_alive import Liveness, alive_check
from migrate_cron.registry import JobSpec, Migration
from migrate_cron.store.workers import WorkerRecord

SWITCH = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def spec(mode: str = "enqueue") -> JobSpec:
    migrations = (Migration("cron", "c", "line", SWITCH),) if mode != "cron" else ()
    return JobSpec("export", command="x", schedule="30 2 * * *", mode=mode, migrations=migrations)


WORKER = ("w1:9:cd", 4.0)  # the reaper lease: a worker renewed it, 4 s left


def test_alive_needs_a_renewing_scheduler_only_in_scheduler_mode() -> None:
    expired = alive_check(
        spec("scheduler"), lambda: Liveness(("s1:7:ab", -40.0), 0, None, WORKER), 1
    )
    assert expired.status == FAIL and "stopped renewing its lease 40s ago" in expired.summary
    # enqueue mode: cron's own line enqueues; no scheduler is needed.
    assert alive_check(spec("enqueue"), lambda: Liveness(None, 2, 30.0, WORKER), 3).status == OK
    assert alive_check(spec("cron"), lambda: Liveness(None, 0, None), None).status == SKIPPED
    down = alive_check(
        spec("enqueue"), lambda: (_ for _ in ()).throw(DatabaseUnavailable("down")), None
    )
    assert down.status == FAIL and "cannot read the queue" in down.summary


def test_alive_is_never_ok_without_a_worker_that_ran_the_job() -> None:
    """ "A worker serves it" is what the words claim: no worker running fails; a worker
    running that never ran a job of this kind is only waiting (its kind or user may not fit)."""
    none = alive_check(spec("enqueue"), lambda: Liveness(None, 0, None, None), 0)
    assert none.status == FAIL and "no worker is running" in none.summary
    gone = alive_check(spec("enqueue"), lambda: Liveness(None, 0, None, ("w1:9:cd", -300.0)), 5)
    assert gone.status == FAIL and "w1:9:cd, was seen 300s ago" in gone.summary
    idle = alive_check(spec("enqueue"), lambda: Liveness(None, 0, None, WORKER), 0)
    assert idle.status == WAITING and "none has run a job of export" in idle.summary
    served = alive_check(spec("enqueue"), lambda: Liveness(None, 0, None, WORKER), 2)
    assert served.status == OK and "workers ran 2 job(s)" in served.summary
    # A renewal due any moment (the holder renews once per heartbeat) is still a live worker.
    late = alive_check(spec("enqueue"), lambda: Liveness(None, 0, None, ("w1:9:cd", -8.0)), 2)
    assert late.status == OK


def record(
    name: str = "w1:9:cd",
    kinds: tuple[str, ...] | None = ("export",),
    run_as: str = "root",
    seen_ago: float = 2.0,
    stopped: bool = False,
) -> WorkerRecord:
    at = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
    return WorkerRecord(
        name=name, host="h1", run_as=run_as, kinds=kinds, pid=9, concurrency=1, in_flight=0,
        started_at=at, last_seen=at, stopped_at=at if stopped else None, seen_ago=seen_ago,
        heartbeat=10.0,
    )  # fmt: skip


def rows(*workers: WorkerRecord) -> Callable[[], Liveness]:
    return lambda: Liveness(None, 0, None, WORKER, workers)


def test_a_worker_serves_the_job_only_if_it_can_run_it_and_heartbeats() -> None:
    """Where the database keeps worker rows, "a worker serves it" means what it says: one
    heartbeating within three of its heartbeats, claiming the kind, running as root or as the
    job's user — whether or not the reaper lease is held, and before its first slot."""
    job = replace(spec(), user="deploy")
    served = alive_check(job, rows(record()), 0)
    assert served.status == OK and "worker w1:9:cd on h1 can run it" in served.summary
    as_deploy = alive_check(job, rows(record(run_as="deploy", kinds=None)), 0)
    assert as_deploy.status == OK
    other_kinds = alive_check(job, rows(record(kinds=("import", "mail"))), 4)
    assert other_kinds.status == FAIL, other_kinds
    assert "none can run export: w1:9:cd claims only import, mail" in other_kinds.summary
    other_user = alive_check(job, rows(record(run_as="www-data")), 4)
    assert other_user.status == FAIL
    assert "w1:9:cd runs as www-data, the job as deploy" in other_user.summary
    assert "as root or as deploy" in other_user.summary
    silent = alive_check(job, rows(record(seen_ago=31.0)), 4)  # three 10 s heartbeats
    assert silent.status == FAIL and "no worker is running" in silent.summary
    assert "w1:9:cd, went silent 31s ago" in silent.summary
    stopped = alive_check(job, rows(record(stopped=True)), 4)
    assert stopped.status == FAIL and "w1:9:cd, stopped" in stopped.summary
    none = alive_check(job, rows(), 0)
    assert none.status == FAIL and "no worker is running:" in none.summary
    # The one that can run it, among others that cannot, serves it.
    mixed = alive_check(job, rows(record("w2:1:ab", kinds=("x",)), record()), 0)
    assert mixed.status == OK and mixed.data["worker"] == "w1:9:cd"
