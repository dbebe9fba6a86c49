"""PostgreSQL's enqueue on the driver's cursor (``PostgresStore._insert_job`` without ``conn=``):
the rows, errors and connection handling are those of SQLAlchemy's execute path, which
``enqueue(conn=…)`` still takes with the same statement."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import create_engine, event, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from migrate_cron.errors import DatabaseUnavailable, DataRefused, SchemaMissing
from migrate_cron.store import Store, open_store
from migrate_cron.store.dialects.postgresql_store import PostgresStore


def _rows(store: Store, ids: list[int]) -> list[dict[str, Any]]:
    """The jobs as another connection reads them (so they were committed), with the payload as
    PostgreSQL stores it (``null`` JSON is not SQL NULL)."""
    job = store.tables.job
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(*job.c, job.c.payload.is_(None).label("payload_is_sql_null"))
            .where(job.c.id.in_(ids))
            .order_by(job.c.id)
        ).all()
    return [dict(r._mapping) for r in rows]


def _comparable(row: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    """A row without what differs between two enqueues of the same call: the id, the kind (the
    two paths write different kinds) and "now" (kept as run_at - created_at when run_at was
    derived from it)."""
    out = {k: v for k, v in row.items() if k not in ("id", "kind", "created_at", "run_at")}
    out["run_at"] = row["run_at"] if "run_at" in call else row["run_at"] - row["created_at"]
    return out


CALLS: list[dict[str, Any]] = [
    {"kind": "k", "payload": None},
    {"kind": "k", "payload": {"a": [1, "é", None]}, "ref": "r1"},
    {"kind": "k", "payload": "text", "delay": 90.5, "max_attempts": 2},
    {"kind": "k", "payload": 3, "run_at": datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)},
    {  # a non-UTC aware datetime is stored as the same instant
        "kind": "k",
        "payload": [],
        "run_at": datetime(2030, 5, 6, 12, 0, 1, 5, tzinfo=timezone(timedelta(hours=5))),
        "scheduled_for": datetime(2030, 5, 6, 2, 0, tzinfo=timezone(timedelta(hours=-3))),
        "ref": "slot",
    },
]


def test_rows_are_those_of_sqlalchemys_execute_path(pg_store: Store) -> None:
    assert isinstance(pg_store, PostgresStore)
    driver_ids, sa_ids = [], []
    for call in CALLS:
        driver_ids.append(pg_store.enqueue(**call).job_id)
    assert pg_store._enqueue_driver is not None  # the driver's cursor wrote those
    with pg_store.engine.connect() as conn:  # the caller's connection: SQLAlchemy's path
        for call in CALLS:
            sa_ids.append(pg_store.enqueue(**{**call, "kind": "k2"}, conn=conn).job_id)
        conn.commit()
    driver_rows, sa_rows = _rows(pg_store, driver_ids), _rows(pg_store, sa_ids)
    for call, ours, theirs in zip(CALLS, driver_rows, sa_rows, strict=True):
        assert ours["kind"] == "k" and theirs["kind"] == "k2"
        assert _comparable(ours, call) == _comparable(theirs, call)
        if "run_at" in call:
            assert ours["run_at"] == call["run_at"]
        else:
            assert ours["run_at"] - ours["created_at"] == timedelta(seconds=call.get("delay", 0))
    assert driver_rows[0]["payload"] is None and not driver_rows[0]["payload_is_sql_null"]
    assert driver_rows[4]["scheduled_for"] == datetime(2030, 5, 6, 5, 0, tzinfo=UTC)


def test_an_existing_ref_returns_the_existing_job_and_wakes_nobody(pg_store: Store) -> None:
    first = pg_store.enqueue("k", None, ref="same")
    listener = pg_store.listener()
    try:
        again = pg_store.enqueue("k", {"other": 1}, ref="same")
        assert again.job_id == first.job_id and first.created and not again.created
        assert not listener.wait(0.2)
        pg_store.enqueue("k", None, ref="new")
        assert listener.wait(5)
    finally:
        listener.close()
    assert len(pg_store.list_jobs()) == 2


def _terminate(store: Store, pids: list[int]) -> None:
    admin = create_engine(store.engine.url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            for pid in pids:
                conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            # Wait until the server has ended them (no sleep as synchronisation).
            deadline = datetime.now(UTC) + timedelta(seconds=10)
            while conn.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(:p)"), {"p": pids}
            ).scalar_one():
                assert datetime.now(UTC) < deadline, "backends still alive"
    finally:
        admin.dispose()


def _pooled_pids(store: Store, n: int) -> list[int]:
    """Open ``n`` pooled connections at once and return their backends' pids (the
    connections go back to the pool)."""
    conns = [store.engine.connect() for _ in range(n)]
    try:
        return [int(c.execute(text("SELECT pg_backend_pid()")).scalar_one()) for c in conns]
    finally:
        for c in conns:
            c.close()


def test_a_killed_connection_fails_one_enqueue_and_is_not_handed_out_again(
    pg_store: Store,
) -> None:
    """The pool does not pre-ping (``make_engine``): the enqueue that gets the killed
    connection fails with DatabaseUnavailable; the connection is invalidated, and so is every
    connection of its generation (SQLAlchemy's ``pool._invalidate``), so after a server
    restart one enqueue fails, not one per pooled connection."""
    pg_store.enqueue("warm", None)
    killed = _pooled_pids(pg_store, 2)
    _terminate(pg_store, killed)
    with pytest.raises(DatabaseUnavailable, match="terminating connection") as failed:
        pg_store.enqueue("k", {"lost": True})
    cause = failed.value.__cause__
    assert isinstance(cause, sa_exc.OperationalError) and cause.connection_invalidated
    assert pg_store.enqueue("k", None).created  # the other dead one is recycled on checkout
    assert pg_store.enqueue("k", None).created
    assert len(pg_store.list_jobs(kind="k")) == 2
    assert not set(_pooled_pids(pg_store, 2)) & set(killed)


def test_missing_tables_give_schema_missing_with_a_masked_url(pg_database: str) -> None:
    url = make_url(pg_database).set(password="s3cret")  # trust auth ignores it
    store = open_store(url.render_as_string(hide_password=False), prefix="absent_")
    try:
        with pytest.raises(SchemaMissing, match="absent_job") as missing:
            store.enqueue("k", None)
        assert "s3cret" not in str(missing.value) and "***" in str(missing.value)
        assert isinstance(missing.value.__cause__, sa_exc.ProgrammingError)
    finally:
        store.dispose()


@pytest.mark.parametrize(
    ("call", "error", "says"),
    [
        ({"kind": "a\x00b"}, sa_exc.DataError, "NUL"),  # refused by psycopg, client side
        ({"kind": "x" * 201}, sa_exc.DataError, "too long"),  # refused by the server
        ({"kind": "k", "payload": {"a": "x\x00"}}, sa_exc.DataError, "Unicode"),
        ({"kind": "k", "max_attempts": 2**40}, sa_exc.DataError, "out of range"),
        ({"kind": "k", "run_at": datetime(2030, 1, 1)}, sa_exc.StatementError, "naive"),
    ],
)
def test_data_errors_surface_as_before(
    pg_store: Store, call: dict[str, Any], error: type[Exception], says: str
) -> None:
    """The exception classes SQLAlchemy's path raised (checked on it before the driver path
    existed), with the job's values hidden (``hide_parameters``); the connection stays usable.
    A value the database refuses is ``DataRefused`` (never an outage to retry), raised from
    that same error."""
    secret = {"payload": {"secret": "p4yload"}} if "payload" not in call else {}
    refused = error is sa_exc.DataError
    with pytest.raises(DataRefused if refused else error, match=says) as raised:
        pg_store.enqueue(**{**call, **secret})
    cause = raised.value.__cause__ if refused else raised.value
    assert type(cause) is error
    assert "p4yload" not in str(raised.value) and "p4yload" not in str(cause)
    assert "parameters hidden" in str(cause)
    assert pg_store.enqueue("k", None).created
    # The caller's connection (SQLAlchemy's path, in the caller's transaction) raises the
    # driver's error as it was: the caller's code decides.
    with pg_store.engine.connect() as conn, pytest.raises(error, match=says) as theirs:
        pg_store.enqueue(**{**call, **secret}, conn=conn)
    assert type(theirs.value) is error


def test_engine_listeners_still_see_the_statement(pg_store: Store) -> None:
    """With a cursor listener on the engine (tracing, a test capturing statements) enqueue
    goes through SQLAlchemy's execute, as before, so the listener sees it — the very text the
    driver's cursor runs otherwise."""
    assert isinstance(pg_store, PostgresStore)
    assert pg_store.enqueue("k", None).created
    assert pg_store._enqueue_driver is not None
    seen: list[str] = []

    def grab(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(pg_store.engine, "before_cursor_execute", grab)
    try:
        assert pg_store.enqueue("k", None).created
    finally:
        event.remove(pg_store.engine, "before_cursor_execute", grab)
    assert seen == [pg_store._enqueue_driver.sql]
