"""The pure part of status: ages, lag rules, thresholds and the JSON shape, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from migrate_cron.ops.status import (
    Thresholds,
    build_report,
    check,
    next_slot_of,
    report_to_dict,
    scheduling_lag,
)
from migrate_cron.registry import JobSpec
from migrate_cron.store.models import KindStatus, QueueStatus, SlotStatus

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SLOT = datetime(2026, 5, 1, 11, 0, tzinfo=UTC)


def slot(**kw: object) -> SlotStatus:
    base: dict[str, object] = {
        "job_name": "j",
        "slot": SLOT,
        "outcome": "enqueued",
        "enqueued_at": SLOT + timedelta(seconds=1),
        "job_id": 1,
        "job_state": "done",
        "started_at": SLOT + timedelta(seconds=40),
    }
    base.update(kw)
    return SlotStatus(**base)  # type: ignore[arg-type]


def test_lag_of_a_run_that_started_is_start_minus_slot() -> None:
    assert scheduling_lag(slot(), NOW, NOW + timedelta(hours=1)) == (40.0, "started")


def test_lag_of_a_run_not_started_grows_with_now() -> None:
    s = slot(job_state="open", started_at=None)
    assert scheduling_lag(s, NOW, NOW + timedelta(hours=1)) == (3600.0, "not started yet")


def test_a_due_slot_that_was_never_enqueued_is_lag_even_if_the_last_run_was_on_time() -> None:
    # A dead scheduler records nothing: the last run looks perfect, the missing one is late.
    missed = NOW - timedelta(minutes=10)
    assert scheduling_lag(slot(), NOW, missed) == (600.0, "next slot not enqueued")


def test_skipped_and_removed_slots_have_no_lag() -> None:
    future = NOW + timedelta(hours=1)
    assert scheduling_lag(slot(outcome="skipped", job_id=None), NOW, future) == (
        None,
        "slot skipped",
    )
    gone = slot(job_state=None, started_at=None)
    assert scheduling_lag(gone, NOW, future) == (None, "job removed")
    cancelled = slot(job_state="cancelled", started_at=None)
    assert scheduling_lag(cancelled, NOW, future) == (None, "job cancelled")


def test_a_run_started_before_its_slot_counts_as_on_time() -> None:
    early = slot(started_at=SLOT - timedelta(seconds=5))
    assert scheduling_lag(early, NOW, None) == (0.0, "started")


def test_next_slot_follows_the_registry_schedule_in_its_timezone() -> None:
    spec = JobSpec(name="j", command="x", schedule="30 2 * * *", timezone="Europe/Berlin")
    # 02:30 CEST = 00:30 UTC
    assert next_slot_of(spec, NOW) == datetime(2026, 5, 2, 0, 30, tzinfo=UTC)
    assert next_slot_of(JobSpec(name="q", command="x"), NOW) is None
    assert next_slot_of(JobSpec(name="r", command="x", schedule="@reboot"), NOW) is None


def _report(**kind: object) -> object:
    fields: dict[str, object] = {"kind": "k"}
    fields.update(kind)
    status = QueueStatus(now=NOW, since=NOW - timedelta(hours=1), kinds=(KindStatus(**fields),))  # type: ignore[arg-type]
    return build_report(status)


def test_oldest_ready_age_is_now_minus_run_at() -> None:
    report = _report(ready=3, oldest_ready_at=NOW - timedelta(seconds=301))
    assert report.kinds[0].oldest_ready_age == 301.0  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("age", "failed", "lag", "breached"),
    [
        (300.0, 0, 120.0, []),  # limits are inclusive
        (300.5, 0, 120.0, ["max-age"]),
        (10.0, 1, 0.0, ["max-failed"]),
        (10.0, 0, 121.0, ["max-lag"]),
        (999.0, 4, 999.0, ["max-age", "max-failed", "max-lag"]),
    ],
)
def test_check_breaches_exactly_above_each_limit(
    age: float, failed: int, lag: float, breached: list[str]
) -> None:
    status = QueueStatus(
        now=NOW,
        since=NOW - timedelta(hours=1),
        kinds=(
            KindStatus(
                kind="j", ready=1, failed=failed, oldest_ready_at=NOW - timedelta(seconds=age)
            ),
        ),
        slots=(slot(started_at=SLOT + timedelta(seconds=lag)),),
    )
    report = build_report(status, [], slot_after=lambda spec, t: None)
    breaches = check(report, Thresholds(max_age=300, max_failed=0, max_lag=120))
    assert [b.threshold for b in breaches] == breached
    for b in breaches:
        assert b.subject == "j"
        assert b.message.startswith(f"{b.threshold}: j: ")


def test_check_can_switch_a_threshold_off() -> None:
    status = QueueStatus(
        now=NOW,
        since=NOW,
        kinds=(KindStatus(kind="j", failed=7, ready=1, oldest_ready_at=NOW - timedelta(days=1)),),
    )
    report = build_report(status)
    assert check(report, Thresholds(max_age=None, max_failed=None, max_lag=None)) == []


def test_breach_messages_name_kind_value_and_limit() -> None:
    status = QueueStatus(
        now=NOW,
        since=NOW,
        kinds=(
            KindStatus(
                kind="email", failed=2, ready=5, oldest_ready_at=NOW - timedelta(seconds=423)
            ),
        ),
    )
    msgs = [b.message for b in check(build_report(status), Thresholds())]
    assert msgs == [
        "max-age: email: oldest ready job has waited 7m 03s (limit 5m, 5 ready)",
        "max-failed: email: 2 failed jobs (limit 0); see `migrate-cron jobs list --state failed"
        " --kind email`",
    ]


def test_registry_jobs_without_rows_are_listed_with_zeros() -> None:
    status = QueueStatus(now=NOW, since=NOW - timedelta(hours=24))
    spec = JobSpec(name="nightly", command="x", schedule="0 2 * * *")
    data = report_to_dict(build_report(status, [spec, JobSpec(name="q", command="y")]))
    assert [k["kind"] for k in data["kinds"]] == ["nightly", "q"]
    nightly = data["kinds"][0]
    assert nightly["ready"] == 0 and nightly["oldest_ready_age"] is None
    assert nightly["schedule"]["next_slot"] == "2026-05-02T02:00:00Z"
    assert nightly["schedule"]["last_slot"] is None and nightly["schedule"]["lag"] is None
    assert data["kinds"][1]["schedule"] is None
    assert data["window_seconds"] == 86400
    assert data["totals"] == {
        "ready": 0,
        "scheduled": 0,
        "running": 0,
        "done": 0,
        "failed": 0,
        "cancelled": 0,
    }
