"""Engines configured the way a job queue needs them, per dialect.

- SQLite: the driver's own transaction handling is switched off and we emit ``BEGIN IMMEDIATE``
  ourselves for writers; with deferred BEGIN, concurrent claimers hit "database is locked"
  even with a long busy timeout. WAL lets readers run beside one writer.
- MySQL/MariaDB: READ COMMITTED, which avoids next-key (gap) locks on the claim index, and
  the ``utf8mb4`` connection character set (any other cannot carry all of a job's text; a URL
  asking for another is refused).
- PostgreSQL: psycopg 3.

Bounded time (docs/reliability.md, row 16): each engine is made for a use (``timeouts.Use``)
and gets that use's limits. Connecting — TCP, the server's greeting and the login — gives up
after the connect limit, also against a server, proxy or firewall that accepts the TCP
connection and never answers (libpq's ``connect_timeout`` counts the login in; PyMySQL reads
the greeting under ``read_timeout``, so that is the connect limit until the connection is
made). A call then waits for an answer at most the answer limit: PyMySQL's socket timeouts on
MySQL/MariaDB, ``deadline.py``'s watchdog on PostgreSQL (libpq has no read timeout);
PostgreSQL statements are also cut by the server after ``MIGRATE_CRON_STATEMENT_TIMEOUT``
seconds when it is set. A connection the server closed is dropped on its return to the pool
with one log line, never a traceback (``reset.py``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from migrate_cron.config import mask_url, normalize_url
from migrate_cron.errors import UsageError
from migrate_cron.store.deadline import watch
from migrate_cron.store.faults import read_only_server
from migrate_cron.store.reset import NO_DEFAULT_RESET, own_reset
from migrate_cron.store.timeouts import (
    SQLITE_BUSY_TIMEOUT_MS,
    Limits,
    Use,
    limits,
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


def utf8mb4_charset(asked: Any) -> str:
    """The MySQL/MariaDB connection character set: ``utf8mb4``, whatever the server's default
    (``latin1`` on one started without a config). A URL naming another is refused rather than
    followed: a ``latin1`` or ``utf8`` (3-byte) connection cannot send ``✓`` or an emoji."""
    if asked not in (None, "utf8mb4"):
        raise UsageError(f"charset={asked} in the database URL: migrate-cron needs utf8mb4")
    return "utf8mb4"


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


def make_engine(
    url: str, use: Use = Use.LONG, *, sqlite_must_exist: bool = False, **kwargs: Any
) -> Engine:
    """Create an engine for ``url`` with our per-dialect recipe and ``use``'s time limits.

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
    bound = limits(use)
    connect_args = dict(kwargs.pop("connect_args", {}))
    own_answer = False
    if backend in ("mysql", "mariadb"):
        kwargs.setdefault("isolation_level", "READ COMMITTED")
        connect_args["charset"] = utf8mb4_charset(parsed.query.get("charset"))
        kwargs.setdefault("pool_recycle", 3600)
        connect_args.setdefault("connect_timeout", bound.connect)
        own_answer = "read_timeout" not in connect_args
        if own_answer:  # the greeting is read under the connect limit (``_answer_after``)
            connect_args["read_timeout"] = connect_args["write_timeout"] = bound.connect
    elif backend == "postgresql":
        connect_args.setdefault("connect_timeout", bound.connect)
        if options := statement_options():
            connect_args.setdefault("options", options)
    kwargs["connect_args"] = connect_args
    kwargs.setdefault("hide_parameters", True)  # errors and logs never show job data
    kwargs.setdefault("pool_size", 5)
    kwargs.setdefault("max_overflow", 10)
    for key, value in NO_DEFAULT_RESET.items():
        kwargs.setdefault(key, value)
    try:
        engine = create_engine(url, **kwargs)
    except ImportError as exc:
        raise UsageError(f"no driver for {mask_url(url)!r}: {exc}") from None
    except Exception as exc:
        raise UsageError(f"cannot use database URL {mask_url(url)!r}: {exc}") from None
    own_reset(engine)
    if backend == "postgresql":
        _read_only_means_disconnected(engine)
        watch(engine, bound.answer)
    elif own_answer:
        _answer_after(engine, bound)
    return engine


def _read_only_means_disconnected(engine: Engine) -> None:
    """A session on a server that takes no writes (SQLSTATE 25006: the old primary, now a
    replica, reached through a name or address that has not followed the failover yet) counts
    as a lost connection: SQLAlchemy then discards it and every pooled session opened before
    it (the pool's invalidation), so the next try reconnects — with
    ``target_session_attrs=read-write`` to whichever host is the primary — and the Store says
    ``DatabaseUnavailable``, which every loop waits out. ``is_disconnect`` is the dialect's
    hook for exactly this decision; the engine's own dialect instance is wrapped, so nothing
    else changes (``DriverStatement`` asks the same hook)."""
    dialect = engine.dialect
    own = dialect.is_disconnect

    def is_disconnect(error: Any, connection: Any, cursor: Any) -> bool:
        return bool(own(error, connection, cursor)) or read_only_server(error)

    dialect.is_disconnect = is_disconnect  # type: ignore[method-assign,assignment]


def _answer_after(engine: Engine, bound: Limits) -> None:
    """Once a PyMySQL connection is made, its reads and writes wait up to the answer limit
    (its greeting was read under the connect limit). PyMySQL has no public setter: these are
    the attributes its constructor stores ``read_timeout`` and ``write_timeout`` in and every
    read and write applies (PyMySQL 1.x; ``tests/store/test_timeouts.py`` checks it)."""
    answer = bound.answer or None

    @event.listens_for(engine, "connect", insert=True)
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn._read_timeout = dbapi_conn._write_timeout = answer


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
