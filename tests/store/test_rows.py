"""``RowQueue``: the job table's guarantees on a business table, per backend — fenced
finishing, backoff through ``locked_until``, reaping, release — without a worker process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, Table, column, create_engine, select

from migrate_cron.errors import SchemaMissing
from migrate_cron.store import open_store
from migrate_cron.store.dialects import normalize_url
from migrate_cron.store.row_queue import RowQueue
from tests.faults.orders import (
    DONE,
    FAILED,
    PENDING,
    PROCESSING,
    SHIPPED,
    apply_claim_revision,
    create_orders,
    registry_text,
    status_counts,
    table_spec,
)


@pytest.fixture
def orders(
    db_url: str, table_prefix: str, tmp_path: Path
) -> Iterator[tuple[RowQueue, Engine, Table]]:
    name = f"{table_prefix}orders"
    spec = table_spec(registry_text("orders", name, "true", max_attempts=2, batch=5))
    engine = create_engine(normalize_url(db_url))
    table = create_orders(engine, name, pending=6, untouched=2)
    apply_claim_revision(db_url, spec, tmp_path)
    store = open_store(db_url)
    try:
        yield RowQueue(store, spec), engine, table
    finally:
        store.dispose()
        table.drop(engine, checkfirst=True)
        engine.dispose()


def _status(engine: Engine, table: Table, key: int) -> str:
    with engine.connect() as conn:
        return str(conn.execute(select(table.c.status).where(table.c.id == key)).scalar_one())


def test_claim_takes_ready_rows_in_order_once(orders: tuple[RowQueue, Engine, Table]) -> None:
    rows, engine, table = orders
    rows.check()
    first = rows.claim("w1", 4, lease=30)
    second = rows.claim("w2", 4, lease=30)
    assert len(first) == 4 and len(second) == 2
    assert not {j.id for j in first} & {j.id for j in second}
    assert all(j.attempts == 1 and j.payload == j.id for j in first + second)
    assert rows.claim("w3", 4, lease=30) == []
    assert status_counts(engine, table) == {PROCESSING: 6, SHIPPED: 2}


def test_finishing_is_fenced_on_the_owner(orders: tuple[RowQueue, Engine, Table]) -> None:
    rows, engine, table = orders
    job = rows.claim("w1", 1, lease=30)[0]
    assert rows.complete("intruder", [job.id]) == 0
    assert rows.heartbeat("intruder", [job.id], 30) == 0
    assert rows.fail("intruder", job.id, "boom") is None
    assert rows.heartbeat("w1", [job.id], 30) == 1
    assert rows.owned_jobs("w1", [job.id]) == [job.id]
    assert rows.complete("w1", [job.id]) == 1
    assert _status(engine, table, job.id) == DONE
    assert rows.complete("w1", [job.id]) == 0  # a replayed outcome changes nothing


def test_a_failure_retries_after_its_backoff_then_fails_for_good(
    orders: tuple[RowQueue, Engine, Table],
) -> None:
    rows, engine, table = orders
    job = rows.claim("w1", 1, lease=30)[0]
    assert rows.fail("w1", job.id, "exit code 1", retry_in=1.0) == "open"
    assert _status(engine, table, job.id) == PENDING
    claimed = [j.id for j in rows.claim("w1", 10, lease=30)]
    assert job.id not in claimed  # not before its backoff has passed
    rows.release("w1", claimed)
    time.sleep(1.1)
    again = next(j for j in rows.claim("w1", 10, lease=30) if j.id == job.id)
    assert again.attempts == 2  # max_attempts = 2: this was the last
    assert rows.fail("w1", job.id, "exit code 1", retry_in=1.0) == "failed"
    with engine.connect() as conn:
        status, error = conn.execute(
            select(table.c.status, column("last_error")).where(table.c.id == job.id)
        ).one()
    assert (status, error) == (FAILED, "exit code 1")


def test_release_gives_rows_back_without_counting_the_attempt(
    orders: tuple[RowQueue, Engine, Table],
) -> None:
    rows, engine, table = orders
    jobs = rows.claim("w1", 6, lease=30)
    assert rows.release("w1", [j.id for j in jobs]) == 6
    assert status_counts(engine, table) == {PENDING: 6, SHIPPED: 2}
    assert {j.attempts for j in rows.claim("w2", 6, lease=30)} == {1}


def test_the_reaper_returns_expired_leases(orders: tuple[RowQueue, Engine, Table]) -> None:
    rows, engine, table = orders
    jobs = rows.claim("dead", 6, lease=0.5)
    time.sleep(0.7)
    assert rows.reap().reopened == 6
    assert status_counts(engine, table) == {PENDING: 6, SHIPPED: 2}
    assert rows.complete("dead", [j.id for j in jobs]) == 0  # the dead worker is fenced out
    rows.claim("dead-again", 6, lease=0.5)  # second attempt of max_attempts = 2
    time.sleep(0.7)
    result = rows.reap()
    assert (result.reopened, result.failed) == (0, 6)
    assert status_counts(engine, table) == {FAILED: 6, SHIPPED: 2}


def test_a_table_without_claim_columns_names_the_command(db_url: str, table_prefix: str) -> None:
    name = f"{table_prefix}orders"
    spec = table_spec(registry_text("orders", name, "true"))
    engine = create_engine(normalize_url(db_url))
    table = create_orders(engine, name, pending=1, untouched=0)
    store = open_store(db_url)
    try:
        with pytest.raises(SchemaMissing, match="generate migration --claim-table orders"):
            RowQueue(store, spec).check()
    finally:
        store.dispose()
        table.drop(engine)
        engine.dispose()


def test_claim_uses_the_partial_claim_index_on_postgresql(
    pg_database: str, table_prefix: str, tmp_path: Path
) -> None:
    """100k done rows, 100 pending: the claim reads the partial index, never the table."""
    from sqlalchemy import event, text

    name = f"{table_prefix}orders"
    spec = table_spec(registry_text("orders", name, "true"))
    engine = create_engine(normalize_url(pg_database))
    table = create_orders(engine, name, pending=0, untouched=0)
    apply_claim_revision(pg_database, spec, tmp_path)
    store = open_store(pg_database)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO {name} (id, customer, amount, status, created_at) SELECT i, "
                    "'c', 1, CASE WHEN i <= 100 THEN 'pending' ELSE 'done' END, now() "
                    "FROM generate_series(1, 100100) AS i"
                )
            )
            conn.execute(text(f"ANALYZE {name}"))
        captured: list[tuple[str, object]] = []

        def grab(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
            if "SKIP LOCKED" in statement:
                captured.append((statement, parameters))

        event.listen(store.engine, "before_cursor_execute", grab)
        try:
            assert len(RowQueue(store, spec).claim("explainer", 10, lease=30)) == 10
        finally:
            event.remove(store.engine, "before_cursor_execute", grab)
        statement, params = captured[0]
        with store.engine.begin() as conn:
            plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params))  # type: ignore[arg-type]
        assert f"{name}_claim_idx" in plan, plan
        assert f"Seq Scan on {name}" not in plan, plan
    finally:
        store.dispose()
        table.drop(engine, checkfirst=True)
        engine.dispose()


def test_finishing_is_fenced_by_the_attempt_not_the_clock(
    orders: tuple[RowQueue, Engine, Table],
) -> None:
    """A held outcome lands on a row the reaper took back, until another attempt claims it."""
    rows, engine, table = orders
    first, second = rows.claim("w1", 2, lease=0.5)
    time.sleep(0.7)
    assert rows.reap().reopened == 2
    assert rows.complete("w1", [first.id], attempts={first.id: 1}) == 1
    assert _status(engine, table, first.id) == DONE
    assert rows.complete("w1", [first.id], attempts={first.id: 1}) == 0  # once
    assert rows.fenced_out("w1", {first.id: 1}) == {}
    [again] = [j for j in rows.claim("w2", 6, lease=30) if j.id == second.id]
    assert again.attempts == 2
    assert rows.fail("w1", second.id, "late", attempt=1) is None
    assert rows.fenced_out("w1", {second.id: 1}) == {second.id: "taken over by another attempt (2)"}
    assert _status(engine, table, second.id) == PROCESSING
