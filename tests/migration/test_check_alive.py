"""The liveness check of verify (a scheduler and a worker serve the job), on plain values."""

from __future__ import annotations

from datetime import UTC, datetime

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.migration.check import FAIL, OK, SKIPPED, WAITING
from migrate_cron.migration.check_alive import Liveness, alive_check
from migrate_cron.registry import JobSpec, Migration

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
