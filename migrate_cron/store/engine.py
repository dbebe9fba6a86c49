"""Engines configured the way a job queue needs them, per dialect.

- SQLite: the driver's own transaction handling is switched off and we emit ``BEGIN IMMEDIATE``
  ourselves for writers; with deferred BEGIN, concurrent claimers hit "database is locked"
  even with a long busy timeout. WAL lets readers run beside one writer.
- MySQL/MariaDB: READ COMMITTED, which avoids next-key (gap) locks on the claim index.
- PostgreSQL: psycopg 3.

Bounded time (docs/reliability.md): every connection attempt gives up after
``MIGRATE_CRON_CONNECT_TIMEOUT`` seconds (default 10) — also against a server, proxy or
firewall that accepts the TCP connection and never answers. MySQL/MariaDB reads and writes
give up after ``MIGRATE_CRON_IO_TIMEOUT`` seconds (default 120; PyMySQL's socket timeouts,
which also bound its handshake);
PostgreSQL statements are cut by the server after ``MIGRATE_CRON_STATEMENT_TIMEOUT`` seconds
when it is set (``statement_timeout``; off by default: ``db upgrade`` on a large table may
legitimately take long). What no socket timeout can bound — a connection that froze in the
middle of a statement — the commands bound themselves: ``enqueue`` spools and exits 75 after
25 s, the worker and the scheduler exit after their shutdown bound on SIGTERM.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from migrate_cron.config import mask_url, normalize_url
from migrate_cron.errors import UsageError
from migrate_cron.store.timeouts import (
    SQLITE_BUSY_TIMEOUT_MS,
    connect_timeout,
    io_timeout,
    statement_options,
)


def dialect_family(name: str) -> str:
    """``postgresql``, ``mysql`` (MySQL and MariaDB) or ``sqlite``."""
    if name in ("mysql", "mariadb"):
        return "mysql"
    return name


def display_url(url: str) -> str:
    """``url`` as messages print it (``StoreBase.url_safe``): SQLAlchemy's rendering with the
    password hidden, under the scheme the user typed (``postgresql://``, not the
    ``postgresql+psycopg://`` we connect with). ``direct.py`` borrows it for its errors."""
    try:
        rendered = make_url(normalize_url(url)).render_as_string(hide_password=True)
    except Exception:  # sqlalchemy.exc.ArgumentError: print what we have
        rendered = url
    typed, sep, _ = url.partition("://")
    connected, sep2, rest = rendered.partition("://")
    if sep and sep2 and typed != connected:
        rendered = f"{typed}://{rest}"
    return mask_url(rendered)


def missing_sqlite_file(url: str) -> str | None:
    """The path of the SQLite file ``url`` names when that file does not exist yet (None for
    other databases, in-memory ones and URI filenames). Reading commands ask first: SQLite
    creates an empty file on connect, and a status in the wrong directory would leave one."""
    import os

    try:
        parsed = make_url(normalize_url(url))
    except Exception:  # sqlalchemy.exc.ArgumentError: make_engine says so
        return None
    if parsed.get_backend_name() != "sqlite" or "uri" in parsed.query:
        return None
    path = parsed.database or ""
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return None if os.path.exists(path) else path


def make_engine(url: str, *, sqlite_must_exist: bool = False, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` with our per-dialect recipe applied.

    ``sqlite_must_exist``: connecting to a SQLite file that does not exist raises
    ``SchemaMissing`` ("no database yet") instead of creating an empty file."""
    url = normalize_url(url)
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError
        raise UsageError(f"cannot parse database URL {mask_url(url)!r}: {exc}") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        engine = _sqlite_engine(url, **kwargs)
        if sqlite_must_exist:
            _refuse_missing_file(engine, url)
        return engine
    connect_args = dict(kwargs.pop("connect_args", {}))
    if backend in ("mysql", "mariadb"):
        kwargs.setdefault("isolation_level", "READ COMMITTED")
        kwargs.setdefault("pool_recycle", 3600)
        connect_args.setdefault("connect_timeout", connect_timeout())
        if io := io_timeout():
            connect_args.setdefault("read_timeout", io)
            connect_args.setdefault("write_timeout", io)
    elif backend == "postgresql":
        connect_args.setdefault("connect_timeout", connect_timeout())
        if options := statement_options():
            connect_args.setdefault("options", options)
    kwargs["connect_args"] = connect_args
    kwargs.setdefault("hide_parameters", True)  # errors and logs never show job data
    kwargs.setdefault("pool_size", 5)
    kwargs.setdefault("max_overflow", 10)
    try:
        return create_engine(url, **kwargs)
    except ImportError as exc:
        raise UsageError(f"no driver for {mask_url(url)!r}: {exc}") from None
    except Exception as exc:
        raise UsageError(f"cannot use database URL {mask_url(url)!r}: {exc}") from None


def _refuse_missing_file(engine: Engine, url: str) -> None:
    """Checked at each connect (not when the engine is made: ``open_store`` connects
    nothing, and callers that tolerate an unreadable queue catch the error at first use)."""

    @event.listens_for(engine, "do_connect")
    def _exists(*_: Any) -> None:
        missing = missing_sqlite_file(url)
        if missing is not None:
            from migrate_cron.errors import SchemaMissing

            raise SchemaMissing(
                f"no database yet: {missing} does not exist ({display_url(url)}) — create it "
                "with `migrate-cron db upgrade`, or give --database-url"
            )


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
