"""Helpers shared by the ops and CLI tests: stores on an injected clock, and a timeline of
jobs with known timestamps whose every status number is known in advance."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from migrate_cron.clock import FakeClock
from migrate_cron.registry import JobSpec
from migrate_cron.store import Store, open_store

D = datetime(2026, 3, 2, tzinfo=UTC)
NOW = D + timedelta(hours=12, minutes=3)

SPECS = (
    JobSpec(name="nightly", command="true", schedule="0 2 * * *", mode="scheduler"),
    JobSpec(name="every5", command="true", schedule="*/5 * * * *", mode="scheduler"),
    JobSpec(name="hourly-waiting", command="true", schedule="0 * * * *", mode="scheduler"),
    JobSpec(name="queue-only", command="true"),
)


@contextmanager
def clocked_store(
    url: str, prefix: str, start: datetime = NOW
) -> Iterator[tuple[Store, FakeClock]]:
    """A store whose every timestamp comes from a FakeClock; tables dropped afterwards."""
    clock = FakeClock(start)
    store = open_store(url, prefix=prefix, clock=clock)
    store.create_schema()
    try:
        yield store, clock
    finally:
        store.drop_schema()
        store.dispose()


def at(clock: FakeClock, when: datetime) -> FakeClock:
    clock.set(when)
    return clock


def run_one(store: Store, clock: FakeClock, kind: str, start: datetime, seconds: float) -> int:
    """Enqueue, claim at ``start`` and complete ``seconds`` later; returns the job id."""
    at(clock, start)
    job_id = store.enqueue(kind, run_at=start).job_id
    [job] = store.claim("w", 1, lease=86400, kinds=[kind])
    assert job.id == job_id
    at(clock, start + timedelta(seconds=seconds))
    assert store.complete("w", [job_id]) == 1
    return job_id


def build_timeline(store: Store, clock: FakeClock) -> None:
    """The scenario of ``EXPECTED`` (times on 2026-03-02 UTC, status read at 12:03:00)."""
    # report: an old run outside the 24h window (must not count), then 60 s, 120 s, 600 s.
    run_one(store, clock, "report", D - timedelta(days=2), 9999)
    # nightly: slot 02:00, enqueued 02:00:05, started 02:00:30 (lag 30 s), ran 60 s.
    at(clock, D + timedelta(hours=2, seconds=5))
    store.enqueue_run("nightly", D + timedelta(hours=2))
    at(clock, D + timedelta(hours=2, seconds=30))
    [nightly] = store.claim("w", 1, lease=86400, kinds=["nightly"])
    at(clock, D + timedelta(hours=2, seconds=90))
    store.complete("w", [nightly.id])
    # email: 20 jobs claimed at 11:00:00, job i finishes at 11:00:00 + i s.
    t = D + timedelta(hours=11)
    at(clock, t)
    ids = [store.enqueue("email", {"n": i}, run_at=t).job_id for i in range(20)]
    claimed = store.claim("w", 20, lease=86400, kinds=["email"])
    assert sorted(j.id for j in claimed) == sorted(ids)
    for i, job_id in enumerate(sorted(ids), start=1):
        at(clock, t + timedelta(seconds=i))
        store.complete("w", [job_id])
    # report: three jobs claimed at 11:10, done after 60, 120 and 600 s.
    t = D + timedelta(hours=11, minutes=10)
    at(clock, t)
    rids = [store.enqueue("report", run_at=t).job_id for _ in range(3)]
    store.claim("w", 3, lease=86400, kinds=["report"])
    for job_id, secs in zip(sorted(rids), (60, 120, 600), strict=True):
        at(clock, t + timedelta(seconds=secs))
        store.complete("w", [job_id])
    # sms: two permanent failures (11:31, 11:32) and one cancelled job.
    t = D + timedelta(hours=11, minutes=30)
    at(clock, t)
    sids = [store.enqueue("sms", run_at=t, max_attempts=1).job_id for _ in range(2)]
    store.claim("w", 2, lease=86400, kinds=["sms"])
    for minute, job_id in ((31, sids[0]), (32, sids[1])):
        at(clock, D + timedelta(hours=11, minutes=minute))
        assert store.fail("w", job_id, "boom") == "failed"
    at(clock, D + timedelta(hours=11, minutes=33))
    cancel_id = store.enqueue("sms", run_at=clock.now()).job_id
    assert store.cancel([cancel_id]) == 1
    # every5: slot 11:40 ran at once for 10 s; slot 11:45 was never enqueued.
    at(clock, D + timedelta(hours=11, minutes=40))
    store.enqueue_run("every5", D + timedelta(hours=11, minutes=40))
    [e5] = store.claim("w", 1, lease=86400, kinds=["every5"])
    at(clock, D + timedelta(hours=11, minutes=40, seconds=10))
    store.complete("w", [e5.id])
    # email: one running since 11:50, two ready (run_at 11:56 and 12:02), one due at 13:00.
    at(clock, D + timedelta(hours=11, minutes=50))
    store.enqueue("email", run_at=clock.now())
    assert len(store.claim("w", 1, lease=86400, kinds=["email"])) == 1
    store.enqueue("email", run_at=D + timedelta(hours=11, minutes=56))
    store.enqueue("email", run_at=D + timedelta(hours=12, minutes=2))
    store.enqueue("email", run_at=D + timedelta(hours=13))
    # hourly-waiting: slot 12:00 enqueued at 12:00:01, not started.
    at(clock, D + timedelta(hours=12, seconds=1))
    store.enqueue_run("hourly-waiting", D + timedelta(hours=12))
    at(clock, NOW)


def iso(dt: datetime) -> str:
    """A time as every ``--json`` document writes it: RFC 3339, UTC, ``Z``."""
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


# Every number `status --json` reports for the timeline, read at NOW with --since 24h.
EXPECTED: dict[str, dict[str, Any]] = {
    "email": {
        "ready": 2,
        "scheduled": 1,
        "running": 1,
        "done": 20,
        "failed": 0,
        "cancelled": 0,
        "oldest_ready_age": 420.0,
        "duration_p50": 10.5,
        "duration_p95": 19.05,
        "duration_max": 20.0,
        "last_success": iso(D + timedelta(hours=11, seconds=20)),
        "last_failure": None,
        "schedule": None,
    },
    "every5": {
        "ready": 0,
        "scheduled": 0,
        "running": 0,
        "done": 1,
        "failed": 0,
        "cancelled": 0,
        "oldest_ready_age": None,
        "duration_p50": 10.0,
        "duration_p95": 10.0,
        "duration_max": 10.0,
        "last_success": iso(D + timedelta(hours=11, minutes=40, seconds=10)),
        "last_failure": None,
        "schedule": {
            "expression": "*/5 * * * *",
            "timezone": "UTC",
            "last_slot": iso(D + timedelta(hours=11, minutes=40)),
            "last_outcome": "enqueued",
            "enqueued_at": iso(D + timedelta(hours=11, minutes=40)),
            "job_state": "done",
            "started_at": iso(D + timedelta(hours=11, minutes=40)),
            "lag": 1080.0,
            "lag_reason": "next slot not enqueued",
            "missed_slot": iso(D + timedelta(hours=11, minutes=45)),
            "next_slot": iso(D + timedelta(hours=12, minutes=5)),
        },
    },
    "hourly-waiting": {
        "ready": 1,
        "scheduled": 0,
        "running": 0,
        "done": 0,
        "failed": 0,
        "cancelled": 0,
        "oldest_ready_age": 180.0,  # since its slot (12:00), not its row (12:00:01)
        "duration_p50": None,
        "duration_p95": None,
        "duration_max": None,
        "last_success": None,
        "last_failure": None,
        "schedule": {
            "expression": "0 * * * *",
            "timezone": "UTC",
            "last_slot": iso(D + timedelta(hours=12)),
            "last_outcome": "enqueued",
            "enqueued_at": iso(D + timedelta(hours=12, seconds=1)),
            "job_state": "open",
            "started_at": None,
            "lag": 180.0,
            "lag_reason": "not started yet",
            "missed_slot": None,
            "next_slot": iso(D + timedelta(hours=13)),
        },
    },
    "nightly": {
        "ready": 0,
        "scheduled": 0,
        "running": 0,
        "done": 1,
        "failed": 0,
        "cancelled": 0,
        "oldest_ready_age": None,
        "duration_p50": 60.0,
        "duration_p95": 60.0,
        "duration_max": 60.0,
        "last_success": iso(D + timedelta(hours=2, seconds=90)),
        "last_failure": None,
        "schedule": {
            "expression": "0 2 * * *",
            "timezone": "UTC",
            "last_slot": iso(D + timedelta(hours=2)),
            "last_outcome": "enqueued",
            "enqueued_at": iso(D + timedelta(hours=2, seconds=5)),
            "job_state": "done",
            "started_at": iso(D + timedelta(hours=2, seconds=30)),
            "lag": 30.0,
            "lag_reason": "started",
            "missed_slot": None,
            "next_slot": iso(D + timedelta(days=1, hours=2)),
        },
    },
    "queue-only": {
        "ready": 0,
        "scheduled": 0,
        "running": 0,
        "done": 0,
        "failed": 0,
        "cancelled": 0,
        "oldest_ready_age": None,
        "duration_p50": None,
        "duration_p95": None,
        "duration_max": None,
        "last_success": None,
        "last_failure": None,
        "schedule": None,
    },
    "report": {
        "ready": 0,
        "scheduled": 0,
        "running": 0,
        "done": 3,
        "failed": 0,
        "cancelled": 0,
        "oldest_ready_age": None,
        "duration_p50": 120.0,
        "duration_p95": 552.0,
        "duration_max": 600.0,
        "last_success": iso(D + timedelta(hours=11, minutes=20)),
        "last_failure": None,
        "schedule": None,
    },
    "sms": {
        "ready": 0,
        "scheduled": 0,
        "running": 0,
        "done": 0,
        "failed": 2,
        "cancelled": 1,
        "oldest_ready_age": None,
        "duration_p50": None,
        "duration_p95": None,
        "duration_max": None,
        "last_success": None,
        "last_failure": iso(D + timedelta(hours=11, minutes=32)),
        "schedule": None,
    },
}


def bulk_done(
    store: Store, n: int, *, kind: str = "bulk", finished: datetime, chunk: int = 10000
) -> None:
    """Insert ``n`` done rows finished at ``finished`` (test data, not a store operation)."""
    job = store.tables.job
    row = {
        "kind": kind,
        "state": "done",
        "attempts": 1,
        "max_attempts": 5,
        "run_at": finished - timedelta(seconds=2),
        "created_at": finished - timedelta(seconds=2),
        "started_at": finished - timedelta(seconds=1),
        "finished_at": finished,
    }
    with store.engine.begin() as conn:
        for start in range(0, n, chunk):
            conn.execute(insert(job), [row] * min(chunk, n - start))
