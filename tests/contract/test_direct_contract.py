"""``store.direct`` (the driver alone, for ``enqueue`` from cron) writes what
``Store.enqueue_run`` writes, on every backend.

Each case makes the same calls through the direct writer (into the ``store`` fixture's tables)
and through ``Store.enqueue_run`` (into twin tables under a second prefix, same database), then
compares the results and every column of every row: ids, kinds, refs, payloads (SQL NULL vs
JSON null included), states, attempts, slots, outcomes, links. Timestamps that are "now" are
compared to the clock of the call instead (they cannot be equal between two calls). A drift in
either spelling of the insert fails here.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from migrate_cron.errors import DatabaseUnavailable, SchemaMissing
from migrate_cron.store import RunResult, Store, open_slot_writer, open_store
from migrate_cron.store.direct import DirectWriter, Unsupported, open_writer
from tests.conftest import fresh_store

SLOT = datetime(2026, 3, 1, 2, 30, tzinfo=UTC)
#: Columns holding "now" (the database's clock, or this process's on SQLite).
NOW_COLUMNS = {"enqueued_at", "run_at", "created_at"}
#: Set by a test's claim (the running job skip_if_running looks for), not by enqueue_run.
CLAIM_COLUMNS = {"locked_until", "started_at"}


@pytest.fixture
def twin(db_url: str, table_prefix: str, store: Store) -> Iterator[Store]:
    """The Store's side: the same tables under a second prefix."""
    with fresh_store(db_url, f"{table_prefix}s") as other:
        yield other


@pytest.fixture
def direct(db_url: str, table_prefix: str, store: Store) -> Iterator[DirectWriter]:
    writer = open_writer(db_url, table_prefix)
    try:
        yield writer
    finally:
        writer.dispose()


def table_rows(store: Store, table: str) -> list[dict[str, Any]]:
    """Every row of one of ``store``'s tables as the database holds it (no type conversion
    by our schema), "now" columns aside."""
    name = f"{store.prefix}{table}"
    extra = ", payload IS NULL AS payload_is_sql_null" if table == "job" else ""
    with store.engine.connect() as conn:
        rows = conn.execute(text(f"SELECT *{extra} FROM {name} ORDER BY id")).mappings().all()
    return [{k: v for k, v in r.items() if k not in NOW_COLUMNS | CLAIM_COLUMNS} for r in rows]


def now_values(store: Store) -> list[datetime]:
    values = []
    for table, columns in (("job", "run_at, created_at"), ("scheduled_runs", "enqueued_at")):
        with store.engine.connect() as conn:
            for row in conn.execute(text(f"SELECT {columns} FROM {store.prefix}{table}")):
                values += [_aware(v) for v in row]
    return values


def _aware(value: Any) -> datetime:
    stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def assert_same_rows(store: Store, twin: Store) -> None:
    for table in ("job", "scheduled_runs"):
        assert table_rows(store, table) == table_rows(twin, table), table


def both(
    direct: DirectWriter, twin: Store, name: str, slot: datetime, **kw: Any
) -> tuple[RunResult, RunResult]:
    return direct.enqueue_run(name, slot, **kw), twin.enqueue_run(name, slot, **kw)


def test_a_new_slot_then_the_same_slot_again_write_the_same_rows(
    store: Store, twin: Store, direct: DirectWriter
) -> None:
    before = store.db_now() - timedelta(seconds=1)
    for slot, max_attempts in ((SLOT, 3), (SLOT, 7), (SLOT + timedelta(hours=1), 5)):
        got, want = both(direct, twin, "nightly", slot, max_attempts=max_attempts)
        assert got == want
    assert got == RunResult(True, 2, "enqueued")
    again = direct.enqueue_run("nightly", SLOT, max_attempts=9)
    assert again == twin.enqueue_run("nightly", SLOT, max_attempts=9)
    assert again == RunResult(False, 1, "enqueued")
    assert_same_rows(store, twin)
    assert len(table_rows(store, "job")) == 2
    after = store.db_now() + timedelta(seconds=1)
    assert all(before <= t <= after for t in now_values(store))
    # The rows read back through the Store's own types, as the worker will read them.
    (job, _) = sorted(store.list_jobs(kind="nightly"), key=lambda j: j.id)
    assert (job.ref, job.scheduled_for, job.max_attempts, job.payload) == (
        "2026-03-01T02:30:00.000000Z",
        SLOT,
        3,
        None,
    )
    assert job.run_at == job.created_at or abs(job.run_at - job.created_at) < timedelta(seconds=1)


def test_skip_if_running_records_the_slot_as_skipped_while_a_run_is_live(
    store: Store, twin: Store, direct: DirectWriter
) -> None:
    for s in (store, twin):
        s.enqueue("backup", ref="earlier")
        (claimed,) = s.claim("worker-1", n=1, lease=60.0)
        assert claimed.kind == "backup"
    got, want = both(direct, twin, "backup", SLOT, max_attempts=5, skip_if_running=True)
    assert got == want == RunResult(True, None, "skipped")
    got, want = both(direct, twin, "backup", SLOT, max_attempts=5, skip_if_running=True)
    assert got == want == RunResult(False, None, "skipped")
    # Another kind's running job does not count; nor does skip_if_running without a run.
    got, want = both(direct, twin, "other", SLOT, max_attempts=5, skip_if_running=True)
    assert got == want and got.outcome == "enqueued" and got.created
    assert_same_rows(store, twin)


def test_a_dead_workers_run_does_not_make_the_slot_skipped(
    store: Store, twin: Store, direct: DirectWriter
) -> None:
    leases = []
    for s in (store, twin):
        s.enqueue("backup", ref="earlier")
        (claimed,) = s.claim("worker-1", n=1, lease=0.05)
        assert claimed.locked_until is not None
        leases.append(claimed.locked_until)
    deadline = time.monotonic() + 10
    while store.db_now() <= max(leases):  # both leases over (the database's clock)
        assert time.monotonic() < deadline
    got, want = both(direct, twin, "backup", SLOT, max_attempts=5, skip_if_running=True)
    assert got == want and got.outcome == "enqueued"
    assert_same_rows(store, twin)


def test_racing_callers_make_one_job(db_url: str, table_prefix: str, store: Store) -> None:
    """Four direct writers and two Stores on the same slot at once: one job, one slot row,
    every caller told the same job id."""
    writers: list[Any] = [open_writer(db_url, table_prefix) for _ in range(4)]
    writers += [open_store(db_url, prefix=table_prefix) for _ in range(2)]
    start = threading.Barrier(len(writers))
    results: list[RunResult] = []
    errors: list[BaseException] = []

    def call(writer: Any) -> None:
        try:
            start.wait(timeout=30)
            results.append(writer.enqueue_run("racy", SLOT, max_attempts=5))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(w,)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for w in writers:
        w.dispose()
    assert errors == []
    assert sum(r.created for r in results) == 1
    assert {r.job_id for r in results} == {store.list_jobs(kind="racy")[0].id}
    assert len(store.list_jobs(kind="racy")) == 1
    assert len(store.runs("racy")) == 1


def test_missing_tables_and_an_unreachable_database_say_what_the_store_says(
    db_url: str, table_prefix: str, backend: str, tmp_path: Any
) -> None:
    prefix = f"{table_prefix}none_"
    errors = []
    for writer in (open_writer(db_url, prefix), open_store(db_url, prefix=prefix)):
        with pytest.raises(SchemaMissing) as caught:
            writer.enqueue_run("nightly", SLOT, max_attempts=5)
        writer.dispose()
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    away = {
        "sqlite": f"sqlite:///{tmp_path}/no/such/dir/queue.db",
        "postgresql": "postgresql://cron:s3cret@127.0.0.1:9/queue",
        "mariadb": "mariadb+pymysql://cron:s3cret@127.0.0.1:9/queue",
    }[backend]
    errors = []
    for writer in (open_writer(away, ""), open_store(away)):
        with pytest.raises(DatabaseUnavailable) as down:
            writer.enqueue_run("nightly", SLOT, max_attempts=5)
        writer.dispose()
        errors.append(str(down.value))
    assert errors[0] == errors[1]
    assert "s3cret" not in errors[0]


@pytest.mark.parametrize("backend", ["postgresql"])  # LISTEN/NOTIFY is PostgreSQL's
def test_postgresql_listeners_are_woken_once_per_new_job(
    backend: str, store: Store, direct: DirectWriter
) -> None:
    listener = store.listener()
    try:
        assert listener.wait(0.05) is False
        direct.enqueue_run("nightly", SLOT, max_attempts=5)
        assert listener.wait(5.0) is True
        direct.enqueue_run("nightly", SLOT, max_attempts=5)  # already there: nobody woken
        assert listener.wait(0.3) is False
    finally:
        listener.close()


# --------------------------------------------------------------------------- URL forms
@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///relative/queue.db",
        "sqlite:////var/lib/queue.db",
        "postgresql://cron@db/queue",
        "postgres://cron@db:5433/queue?sslmode=require&application_name=cron",
        "postgresql+psycopg://cron:pw@db/queue",
        "postgresql:///queue",
        "postgresql://cron@/queue?host=/var/run/postgresql",
        "postgresql://cron@db1,db2/queue",
        "postgresql://cron@/queue?host=db:5433",
        "postgresql://cron@/queue?host=db1:5432&host=db2:5433&target_session_attrs=read-write",
        "postgresql://cron@db1:5432,db2:5433/queue?target_session_attrs=read-write",
        "mysql+pymysql://cron:p%40ss@db:3307/queue?charset=utf8mb4",
        "mariadb+pymysql://cron@db/queue",
        "mysql://cron@db/queue",
    ],
)
def test_the_url_forms_users_write_take_the_direct_writer(url: str) -> None:
    open_writer(url, "mc_").dispose()  # nothing connects before the first write


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///queue.db?mode=ro",
        "sqlite:///my%20queue.db",
        "postgresql://cron@db/queue?prepare_threshold=0",
        "postgresql://cron@/queue?host=db1:5432&host=db2&port=5433",
        "postgresql://cron@db/queue?port=5433",
        "postgresql://cron@db:port/queue",
        "postgresql://cron@[::1]/queue",
        "postgresql://cron@db/queue?options=-c+statement_timeout%3D5",
        "postgresql+psycopg2://cron@db/queue",
        "mysql+mysqldb://cron@db/queue",
        "mysql+pymysql://cron@db/queue?ssl_ca=/ca.pem",
        "mssql+pyodbc://cron@db/queue",
        "not a url",
    ],
)
def test_anything_else_goes_to_the_store(url: str) -> None:
    with pytest.raises(Unsupported):
        open_writer(url, "")


def test_an_unsupported_url_is_served_by_the_store(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/queue.db?timeout=5"
    writer = open_slot_writer(url, "p_")
    try:
        assert isinstance(writer, Store)
    finally:
        writer.dispose()


def test_a_missing_driver_sends_the_call_to_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Store says "no driver for …" in its own words (``engine.make_engine``)."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ImportError
    writer = open_writer("postgresql://cron@127.0.0.1:9/queue", "")
    with pytest.raises(Unsupported):
        writer.enqueue_run("nightly", SLOT, max_attempts=5)


def test_connections_get_the_engines_session_settings_and_timeouts(
    backend: str, db_url: str, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The values of ``store/timeouts.py`` and the per-dialect recipe of ``engine.py``."""
    monkeypatch.setenv("MIGRATE_CRON_STATEMENT_TIMEOUT", "1.5")
    monkeypatch.setenv("MIGRATE_CRON_IO_TIMEOUT", "7")
    writer = open_writer(db_url, "")
    conn = writer._connect()  # the connection the writer would open
    try:
        cur = conn.cursor()
        if backend == "sqlite":
            cur.execute("PRAGMA journal_mode")
            assert cur.fetchone()[0] == "wal"
            cur.execute("PRAGMA busy_timeout")
            assert cur.fetchone()[0] == 30_000
            assert conn.isolation_level is None  # BEGIN IMMEDIATE is ours
        elif backend == "postgresql":
            cur.execute("SHOW statement_timeout")
            assert cur.fetchone()[0] == "1500ms"
            assert conn.info.get_parameters().get("connect_timeout") == "10"
        else:
            cur.execute("SELECT @@SESSION.tx_isolation")
            assert cur.fetchone()[0] == "READ-COMMITTED"
            assert conn._read_timeout == conn._write_timeout == 7
            assert conn.connect_timeout == 10
    finally:
        conn.close()
