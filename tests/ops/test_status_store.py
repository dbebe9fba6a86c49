"""Every number of `status --json`, on every backend, from jobs with known timestamps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from migrate_cron.ops.status import Thresholds, build_report, check, report_to_dict
from tests.ops.helpers import (
    EXPECTED,
    NOW,
    SPECS,
    build_timeline,
    clocked_store,
    iso,
    run_one,
)


def _compare(actual: dict[str, object], expected: dict[str, object]) -> None:
    for key, want in expected.items():
        got = actual[key]
        if isinstance(want, float):
            assert got == pytest.approx(want, abs=1e-3), key
        elif isinstance(want, dict):
            assert isinstance(got, dict), key
            assert isinstance(got.pop("job_id"), int), key
            _compare(got, want)
            assert set(got) == set(want), key
        else:
            assert got == want, key


def test_status_reports_every_number(db_url: str, table_prefix: str) -> None:
    with clocked_store(db_url, table_prefix) as (store, clock):
        build_timeline(store, clock)
        status = store.status(since=NOW - timedelta(hours=24))
        data = report_to_dict(build_report(status, SPECS))
    assert data["now"] == iso(NOW)
    assert data["since"] == iso(NOW - timedelta(hours=24))
    assert [k["kind"] for k in data["kinds"]] == sorted(EXPECTED)
    for kind in data["kinds"]:
        _compare(kind, EXPECTED[kind["kind"]])
        assert set(kind) == set(EXPECTED[kind["kind"]]) | {"kind"}
    assert data["totals"] == {
        "ready": 3,
        "scheduled": 1,
        "running": 1,
        "done": 25,
        "failed": 2,
        "cancelled": 1,
    }


def test_check_on_the_timeline_breaches_exactly_the_exceeded_limits(
    db_url: str, table_prefix: str
) -> None:
    with clocked_store(db_url, table_prefix) as (store, clock):
        build_timeline(store, clock)
        report = build_report(store.status(since=NOW - timedelta(hours=24)), SPECS)
    found = {(b.threshold, b.subject) for b in check(report, Thresholds())}
    assert found == {
        ("max-age", "email"),
        ("max-failed", "sms"),
        ("max-lag", "every5"),
        ("max-lag", "hourly-waiting"),
    }
    # The values themselves as limits: nothing is breached (limits are inclusive).
    assert check(report, Thresholds(max_age=420, max_failed=2, max_lag=1080)) == []
    just_below = Thresholds(max_age=419.9, max_failed=1, max_lag=1079.9)
    assert {(b.threshold, b.subject) for b in check(report, just_below)} == {
        ("max-age", "email"),
        ("max-failed", "sms"),
        ("max-lag", "every5"),
    }


def test_window_decides_which_done_jobs_count(db_url: str, table_prefix: str) -> None:
    with clocked_store(db_url, table_prefix) as (store, clock):
        build_timeline(store, clock)
        # 11:02:30 .. 12:03: email jobs 1..20 finished 11:00:01..11:00:20 are outside.
        short = {
            k.kind: k for k in store.status(since=NOW - timedelta(minutes=60, seconds=30)).kinds
        }
        wide = {k.kind: k for k in store.status(since=NOW - timedelta(days=3)).kinds}
    assert short["email"].done == 0 and short["email"].duration_p95 is None
    assert short["report"].done == 3
    assert short["email"].last_success is not None  # last success is all-time, not windowed
    assert wide["report"].done == 4
    assert wide["report"].duration_max == pytest.approx(9999)


def test_percentiles_interpolate_like_percentile_cont(db_url: str, table_prefix: str) -> None:
    from tests.ops.helpers import run_one

    with clocked_store(db_url, table_prefix) as (store, clock):
        for i, secs in enumerate([0.5, 1.25, 7.0, 100.0]):
            run_one(store, clock, "k", NOW - timedelta(hours=1, minutes=i), secs)
        clock.set(NOW)
        [k] = store.status(since=NOW - timedelta(hours=2)).kinds
    # n=4: p50 at h=1.5 -> 1.25 + 0.5*(7-1.25); p95 at h=2.85 -> 7 + 0.85*93
    assert k.duration_p50 == pytest.approx(4.125, abs=1e-6)
    assert k.duration_p95 == pytest.approx(86.05, abs=1e-6)
    assert k.duration_max == pytest.approx(100.0, abs=1e-6)


def test_durations_are_the_runs_own_not_claim_to_write(db_url: str, table_prefix: str) -> None:
    """A job claimed at 12:00:00 and written at 12:00:10 whose run took 2 s (it waited for
    a runner, then the finisher's batch): status says 2 s. Jobs done before the history
    existed keep their claim → write time; the done count is the job rows'."""
    from migrate_cron.store.models import AttemptRun

    with clocked_store(db_url, table_prefix) as (store, clock):
        start = NOW - timedelta(minutes=10)
        run_one(store, clock, "legacy", start, 4.0)  # no run recorded
        clock.set(start)
        ids = [store.enqueue("timed").job_id for _ in range(3)]
        store.claim("w", 3, lease=600, kinds=["timed"])
        clock.set(start + timedelta(seconds=10))
        runs = {
            i: AttemptRun(start + timedelta(seconds=1), start + timedelta(seconds=1 + s))
            for i, s in zip(ids, (1.0, 2.0, 3.0), strict=True)
        }
        assert store.complete("w", ids, runs=runs) == 3
        status = store.status(since=NOW - timedelta(hours=1), now=NOW)
    by_kind = {k.kind: k for k in status.kinds}
    timed = by_kind["timed"]
    assert timed.done == 3
    assert timed.duration_p50 == pytest.approx(2.0, abs=1e-3)
    assert timed.duration_max == pytest.approx(3.0, abs=1e-3)
    assert by_kind["legacy"].done == 1
    assert by_kind["legacy"].duration_p50 == pytest.approx(4.0, abs=1e-3)
