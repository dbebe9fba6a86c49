"""The status statements read indexes, not the done rows: PostgreSQL EXPLAIN on a table of
200k done rows over 30 days, a few hundred live rows and 20k slot rows; MariaDB EXPLAIN that
its loose index scans ("Using index for group-by") answer last-success and newest-slot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, text

from migrate_cron.store import Store
from tests.conftest import fresh_store


def _fill(store: Store) -> None:
    job, runs = store.tables.job.name, store.tables.scheduled_runs.name
    kinds = "(ARRAY['email','report','sms','export','sync'])[1 + i % 5]"
    with store.engine.begin() as conn:
        conn.execute(
            text(
                f"INSERT INTO {job} (kind, state, attempts, max_attempts, run_at, created_at,"
                " started_at, finished_at)"
                f" SELECT {kinds}, 'done', 1, 5, t - interval '2 seconds',"
                "  t - interval '2 seconds', t - interval '1 second', t"
                " FROM (SELECT i, now() - (i * interval '13 seconds') AS t"
                "       FROM generate_series(1, 200000) AS i) s"
            )
        )
        conn.execute(
            text(
                f"INSERT INTO {job} (kind, state, attempts, max_attempts, run_at, created_at,"
                " finished_at)"
                f" SELECT {kinds}, (ARRAY['open','failed','running','cancelled'])[1 + i % 4],"
                " 1, 5, now() - interval '1 minute', now(), now()"
                " FROM generate_series(1, 400) AS i"
            )
        )
        conn.execute(
            text(
                f"INSERT INTO {runs} (job_name, scheduled_for, enqueued_at, outcome)"
                " SELECT 'job' || (i % 20), now() - i * interval '1 minute', now(), 'enqueued'"
                " FROM generate_series(1, 20000) AS i"
            )
        )
        attempts = store.tables.attempts.name
        conn.execute(
            text(
                f"INSERT INTO {attempts} (job_id, kind, attempt, worker, started_at,"
                " finished_at, outcome)"
                f" SELECT id, kind, 1, 'w', started_at, finished_at, 'done' FROM {job}"
                " WHERE state = 'done'"
            )
        )
        conn.execute(text(f"ANALYZE {job}"))
        conn.execute(text(f"ANALYZE {runs}"))
        conn.execute(text(f"ANALYZE {attempts}"))


def _executed(store: Store, call: Callable[[], object]) -> list[tuple[str, Any]]:
    """The statements ``call`` really sends to the server (not copies of them)."""
    seen: list[tuple[str, Any]] = []

    def grab(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            seen.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", grab)
    try:
        call()
    finally:
        event.remove(store.engine, "before_cursor_execute", grab)
    return seen


def test_status_statements_use_indexes_not_a_scan_of_done_rows(pg_store: Store) -> None:
    _fill(pg_store)
    now = pg_store.db_now()
    since = now - timedelta(hours=24)
    assert pg_store.attempts_enabled()  # asked once per store, before what we capture
    executed = _executed(pg_store, lambda: pg_store.status(since, now))
    names = ("live", "last", "done", "run_durations", "newest_slots", "slots")
    assert len(executed) == len(names), [s for s, _ in executed]
    job, runs = pg_store.tables.job.name, pg_store.tables.scheduled_runs.name
    attempts = pg_store.tables.attempts.name
    plans = {}
    with pg_store.engine.connect() as conn:
        for name, (statement, params) in zip(names, executed, strict=True):
            rows = conn.exec_driver_sql("EXPLAIN " + statement, params)
            plans[name] = "\n".join(r[0] for r in rows)
    for name, plan in plans.items():
        assert f"Seq Scan on {job}" not in plan, f"{name}:\n{plan}"
        assert f"Seq Scan on {runs}" not in plan, f"{name}:\n{plan}"
        assert f"Seq Scan on {attempts}" not in plan, f"{name}:\n{plan}"
    assert (
        f"{job}_kind_state_idx" in plans["done"] or f"{job}_state_finished_idx" in plans["done"]
    ), plans["done"]
    assert f"{attempts}_" in plans["run_durations"], plans["run_durations"]
    assert f"{job}_kind_state_idx" in plans["last"], plans["last"]
    assert f"{runs}_slot_key" in plans["newest_slots"], plans["newest_slots"]
    assert f"{runs}_slot_key" in plans["slots"], plans["slots"]
    # And the answer is right on this data: 24h / 13s ≈ 6646 done in the window, 1 s each.
    status = pg_store.status(now - timedelta(hours=24), now)
    assert sum(k.done for k in status.kinds) == pytest.approx(86400 / 13, abs=2)
    assert [k.duration_p95 for k in status.kinds] == [pytest.approx(1.0)] * 5
    assert len(status.slots) == 20


@pytest.fixture
def mariadb_store(mariadb_database: str, table_prefix: str) -> Iterator[Store]:
    with fresh_store(mariadb_database, table_prefix) as s:
        yield s


def test_mariadb_status_statements_use_indexes(mariadb_store: Store) -> None:
    from datetime import UTC, datetime

    from tests.ops.helpers import bulk_done

    store = mariadb_store
    now = datetime.now(UTC)
    for i in range(5):
        bulk_done(store, 10_000, kind=f"kind{i}", finished=now - timedelta(days=i + 2))
        bulk_done(store, 1_000, kind=f"kind{i}", finished=now - timedelta(hours=1))
    runs = store.tables.scheduled_runs
    from sqlalchemy import insert

    with store.engine.begin() as conn:
        # Runs of every length to the microsecond: the percentiles need the second pass.
        end = now - timedelta(hours=1)
        conn.execute(
            insert(store.tables.attempts),
            [
                {
                    "job_id": i,
                    "kind": f"kind{i % 5}",
                    "attempt": 1,
                    "worker": "w",
                    "started_at": end - timedelta(microseconds=1_000_000 + i * 997),
                    "finished_at": end,
                    "outcome": "done",
                }
                for i in range(5_000)
            ],
        )
        conn.execute(
            insert(runs),
            [
                {
                    "job_name": f"job{i % 20}",
                    "scheduled_for": now - timedelta(minutes=i),
                    "enqueued_at": now,
                    "outcome": "enqueued",
                }
                for i in range(10_000)
            ],
        )
        tables = (store.tables.job.name, runs.name, store.tables.attempts.name)
        conn.execute(text(f"ANALYZE TABLE {', '.join(tables)}"))
    assert store.attempts_enabled()  # asked once per store, before what we capture
    executed = _executed(store, lambda: store.status(now - timedelta(hours=24), now))
    names = ("live", "last", "done", "histogram", "buckets", "newest_slots", "slots")
    assert len(executed) == len(names), [s for s, _ in executed]
    plans: dict[str, list[dict[str, Any]]] = {}
    with store.engine.connect() as conn:
        for name, (statement, params) in zip(names, executed, strict=True):
            result = conn.exec_driver_sql("EXPLAIN " + statement, params)
            plans[name] = [dict(r._mapping) for r in result]
    ours = {store.tables.job.name, runs.name, store.tables.attempts.name}
    for name, plan in plans.items():
        for step in plan:
            if step["table"] in ours:
                assert step["type"] != "ALL", f"{name}: full scan {step}"
    # Counted and read inside indexes: no row is fetched.
    for name in ("done", "histogram", "buckets"):
        assert "Using index" in (plans[name][0]["Extra"] or ""), plans[name]
    assert plans["done"][0]["key"] == f"{store.tables.job.name}_kind_state_idx", plans["done"]
    assert plans["histogram"][0]["key"] == f"{store.tables.attempts.name}_done_idx"
    for name in ("last", "newest_slots"):
        assert any("Using index for group-by" in (s["Extra"] or "") for s in plans[name]), plans[
            name
        ]
