"""The queue and liveness checks of verify, on plain values (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.migration.verify import FAIL, OK, SKIPPED, WAITING, Liveness, _alive, _queue
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

    return _queue(spec(mode), now, history)


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


def test_alive_needs_a_renewing_scheduler_only_in_scheduler_mode() -> None:
    expired = _alive(spec("scheduler"), lambda: Liveness(("s1:7:ab", -40.0), 0, None))
    assert expired.status == FAIL and "stopped renewing its lease 40s ago" in expired.summary
    # enqueue mode: cron's own line enqueues; no scheduler is needed.
    assert _alive(spec("enqueue"), lambda: Liveness(None, 2, 30.0)).status == OK
    assert _alive(spec("cron"), lambda: Liveness(None, 0, None)).status == SKIPPED
    down = _alive(spec("enqueue"), lambda: (_ for _ in ()).throw(DatabaseUnavailable("down")))
    assert down.status == FAIL and "cannot read the queue" in down.summary
