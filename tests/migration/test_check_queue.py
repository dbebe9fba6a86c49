"""The queue check of verify, on plain values (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.migration.check import FAIL, OK, SKIPPED, WAITING
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
