"""The queue and liveness checks of verify, on plain values (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.migration.check import FAIL, OK, SKIPPED, WAITING
from migrate_cron.migration.check_alive import Liveness, alive_check
from migrate_cron.migration.check_queue import queue_check
from migrate_cron.registry import JobSpec, Migration
from migrate_cron.store.models import KindHistory

SWITCH = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def spec(mode: str = "enqueue") -> JobSpec:
    migrations = (Migration("cron", "c", "line", SWITCH),) if mode != "cron" else ()
    return JobSpec("export", command="x", schedule="30 2 * * *", mode=mode, migrations=migrations)


def check(h: KindHistory | Exception, now: datetime, mode: str = "enqueue"):  # type: ignore[no-untyped-def]
    def history(since: datetime) -> KindHistory:
        assert since == SWITCH
        if isinstance(h, Exception):
            raise h
        return h

    return queue_check(spec(mode), now, history)


def test_not_switched_is_skipped() -> None:
    assert check(KindHistory("export"), SWITCH, mode="cron").status == SKIPPED


def test_no_slot_yet_is_waiting_not_failing() -> None:
    c = check(KindHistory("export"), SWITCH + timedelta(hours=1))
    assert c.status == WAITING and "verify again" in c.details[-1]


def test_a_due_slot_without_any_job_fails_and_says_where_to_look() -> None:
    c = check(KindHistory("export"), SWITCH + timedelta(days=1))
    assert c.status == FAIL and "installed" in c.details[-1]


def test_success_passes_and_shelved_failures_fail() -> None:
    ok = check(KindHistory("export", done=3, retried=1, last_success=SWITCH), SWITCH)
    assert ok.status == OK and "1 needed retries" in ok.summary
    bad = check(
        KindHistory("export", done=3, failed=1, last_error="x\nHTTP 401", last_error_job=7), SWITCH
    )
    assert bad.status == FAIL and any("HTTP 401" in d for d in bad.details)
    assert any("jobs retry --kind export" in d for d in bad.details)


def test_an_unreachable_database_is_a_failed_check() -> None:
    c = check(DatabaseUnavailable("cannot use the database"), SWITCH)
    assert c.status == FAIL and "cannot read the queue" in c.summary


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
