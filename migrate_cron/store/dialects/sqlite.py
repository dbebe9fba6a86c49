"""SQLite: the embedded default, one file on this machine.

Engine: the driver's own transaction handling is switched off and we emit ``BEGIN
IMMEDIATE`` ourselves for writers (with a deferred BEGIN, concurrent claimers hit "database
is locked" even with a long busy timeout); WAL lets readers run beside one writer. The
database's clock is this process's, so "now" is always a parameter. Its Store:
``sqlite_store.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from migrate_cron.store.dialects.entry import (
    READONLY_OPTION,
    ClaimIndex,
    Dialect,
    Stamp,
    Statements,
)
from migrate_cron.store.timeouts import SQLITE_BUSY_TIMEOUT_MS

DIALECT = Dialect(
    name="sqlite",
    title="SQLite",
    backends=("sqlite",),
    module=__name__,
    missing_table_markers=("no such table",),
    store="migrate_cron.store.dialects.sqlite_store:SQLiteStore",
    direct_schemes=("sqlite",),
    claim_index=ClaimIndex.PARTIAL,
    embedded_file=True,
    server_clock=False,
    stamp=Stamp.TEXT,
)

DEFAULT_URL = "sqlite:///migrate-cron.db"

STATEMENTS = Statements(
    running="SELECT id FROM {p}job WHERE kind = ? AND state = {running} AND locked_until > {now} "
    "LIMIT 1",
    insert_run="INSERT INTO {p}scheduled_runs (job_name, scheduled_for, enqueued_at, outcome) "
    "VALUES (?, ?, {now}, ?) ON CONFLICT (job_name, scheduled_for) DO NOTHING RETURNING id",
    existing_run="SELECT job_id, outcome FROM {p}scheduled_runs "
    "WHERE job_name = ? AND scheduled_for = ?",
    insert_job="INSERT INTO {p}job (kind, ref, payload, state, attempts, max_attempts, run_at, "
    "scheduled_for, created_at) VALUES (?, ?, ?, {open}, 0, ?, {now}, ?, {now}) "
    "ON CONFLICT (kind, ref) DO NOTHING RETURNING id",
    existing_job="SELECT id FROM {p}job WHERE kind = ? AND ref = ?",
    link="UPDATE {p}scheduled_runs SET job_id = ? WHERE id = ?",
    tally="INSERT INTO {p}job_tallies (kind, what, period_start, count) VALUES (?, ?, {hour}, ?) "
    "ON CONFLICT (kind, what, period_start) DO UPDATE SET count = count + excluded.count",
    marker="?",
    server_now=None,
)


def column_types(dialect: Dialect) -> dict[str, dict[str, Any]]:
    """Per backend: the column types that differ from the portable ones (``schema.py``).
    SQLite's rowid alias must be INTEGER (a BIGINT key would not be filled in)."""
    from sqlalchemy import Integer

    return {backend: {"id": Integer()} for backend in dialect.backends}


def _setup(dbapi_conn: Any) -> None:
    """A new connection: we BEGIN ourselves; wait for a writer up to the busy timeout; WAL."""
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA journal_mode = WAL")
    cur.execute("PRAGMA synchronous = NORMAL")
    cur.close()


def make_engine(
    url: str, parsed: Any, bound: Any, kwargs: dict[str, Any], server_engine: Any
) -> Any:
    """The SQLAlchemy engine (no pool sizes, no network timeouts: a local file)."""
    from sqlalchemy import create_engine, event

    kwargs.setdefault("hide_parameters", True)
    kwargs.setdefault("connect_args", {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        _setup(dbapi_conn)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get(READONLY_OPTION):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def file_path(parsed: Any) -> str | None:
    """The file a parsed URL names; None for in-memory databases and URI filenames."""
    if "uri" in parsed.query:
        return None
    path = parsed.database or ""
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return str(path)


def connector(rest: str) -> Callable[[], Any]:
    """The direct writer's connection for ``sqlite:///relative`` or ``sqlite:////absolute``:
    a file, no query, no escapes (else ``Unsupported``), set up as the engine's."""
    from migrate_cron.store.dialects.urls import Unsupported

    path = rest[1:] if rest.startswith("/") else ""
    if not path or path == ":memory:" or any(c in path for c in "?%"):
        raise Unsupported("sqlite URL")

    def connect() -> Any:
        import sqlite3

        conn = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000)
        _setup(conn)
        return conn

    return connect


#: What the direct writer's transaction sends itself (the driver's own BEGIN is off).
BEGIN = "BEGIN IMMEDIATE"
