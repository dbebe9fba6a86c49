"""Engines configured the way a job queue needs them, per dialect.

- SQLite: the driver's own transaction handling is switched off and we emit ``BEGIN IMMEDIATE``
  ourselves for writers; with deferred BEGIN, concurrent claimers hit "database is locked"
  even with a long busy timeout. WAL lets readers run beside one writer.
- MySQL/MariaDB: READ COMMITTED, which avoids next-key (gap) locks on the claim index.
- PostgreSQL: psycopg 3.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from migrate_cron.config import mask_url, normalize_url
from migrate_cron.errors import UsageError

SQLITE_BUSY_TIMEOUT_MS = 30_000


def dialect_family(name: str) -> str:
    """``postgresql``, ``mysql`` (MySQL and MariaDB) or ``sqlite``."""
    if name in ("mysql", "mariadb"):
        return "mysql"
    return name


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` with our per-dialect recipe applied."""
    url = normalize_url(url)
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError
        raise UsageError(f"cannot parse database URL {mask_url(url)!r}: {exc}") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url, **kwargs)
    if backend in ("mysql", "mariadb"):
        kwargs.setdefault("isolation_level", "READ COMMITTED")
        kwargs.setdefault("pool_recycle", 3600)
    kwargs.setdefault("hide_parameters", True)  # errors and logs never show job data
    kwargs.setdefault("pool_size", 5)
    kwargs.setdefault("max_overflow", 10)
    try:
        return create_engine(url, **kwargs)
    except ImportError as exc:
        raise UsageError(f"no driver for {mask_url(url)!r}: {exc}") from None
    except Exception as exc:
        raise UsageError(f"cannot use database URL {mask_url(url)!r}: {exc}") from None


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    kwargs.setdefault("hide_parameters", True)
    kwargs.setdefault("connect_args", {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get("sqlite_readonly"):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine
