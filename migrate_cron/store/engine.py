"""Engines configured the way a job queue needs them: the common part here, each database's
recipe in its dialect module (``dialects/*.py``, ``make_engine``): SQLite's BEGIN IMMEDIATE
and pragmas, MySQL/MariaDB's READ COMMITTED and ``utf8mb4``, PostgreSQL's options and
read-only-means-disconnected.

Bounded time (docs/reliability.md, row 16): each engine is made for a use (``timeouts.Use``)
and gets that use's limits. Connecting — TCP, the server's greeting and the login — gives up
after the connect limit, also against a server, proxy or firewall that accepts the TCP
connection and never answers. A call then waits for an answer at most the answer limit (the
driver's socket timeouts, or ``deadline.py``'s watchdog where the driver has none); statements
may also be cut by the server after ``MIGRATE_CRON_STATEMENT_TIMEOUT`` seconds when it is set.
A connection the server closed is dropped on its return to the pool with one log line, never a
traceback (``reset.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from migrate_cron.config import mask_url
from migrate_cron.errors import UsageError
from migrate_cron.store.dialects import Dialect, dialect_for, normalize_url
from migrate_cron.store.reset import NO_DEFAULT_RESET, own_reset
from migrate_cron.store.timeouts import Use, limits


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


def missing_file(url: str) -> str | None:
    """The path of the database file ``url`` names when that file does not exist yet (None
    for servers, in-memory databases and URI filenames). Reading commands ask first: an
    embedded database creates an empty file on connect, and a status in the wrong directory
    would leave one."""
    import os

    try:
        parsed = make_url(normalize_url(url))
        dialect = dialect_for(parsed.get_backend_name())
    except Exception:  # sqlalchemy.exc.ArgumentError, an unknown database: make_engine says so
        return None
    if not dialect.embedded_file:
        return None
    path = dialect.recipe().file_path(parsed)
    return None if path is None or os.path.exists(path) else str(path)


def absolute_file(parsed: Any) -> Any:
    """A parsed URL with an embedded database's file path made absolute (cron runs in HOME);
    ``UsageError`` for an in-memory one, which no other process can reach. Other URLs, and
    databases the table does not know (``make_engine`` says so later), as they are."""
    from pathlib import Path

    try:
        dialect = dialect_of(parsed)
    except UsageError:
        return parsed
    if not dialect.embedded_file:
        return parsed
    db = parsed.database or ""
    if not db or db == ":memory:" or db.startswith("file:"):
        raise UsageError(f"an in-memory {dialect.title} database cannot be shared with cron")
    return parsed.set(database=str(Path(db).resolve()))


def make_engine(
    url: str, use: Use = Use.LONG, *, file_must_exist: bool = False, **kwargs: Any
) -> Engine:
    """Create an engine for ``url`` with its dialect's recipe and ``use``'s time limits; a
    database ``DIALECTS`` does not know is refused (``UsageError``).

    ``file_must_exist``: connecting to an embedded database whose file does not exist raises
    ``SchemaMissing`` ("no database yet") instead of creating an empty file."""
    url = normalize_url(url)
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError
        raise UsageError(f"cannot parse database URL {mask_url(url)!r}: {exc}") from None
    dialect = dialect_of(parsed)
    engine: Engine = dialect.recipe().make_engine(url, parsed, limits(use), kwargs, server_engine)
    if file_must_exist and dialect.embedded_file:
        _refuse_missing_file(engine, url)
    return engine


def dialect_of(parsed: Any) -> Dialect:
    """The entry of a parsed URL's database (``UsageError`` when there is none)."""
    return dialect_for(parsed.get_backend_name())


def server_engine(
    url: str, kwargs: dict[str, Any], idle: Callable[[Any], bool] | None = None
) -> Engine:
    """The common part of a server database's engine: a pool, job data kept out of errors
    and logs, our own reset on return (``reset.py``, with the dialect's ``idle`` test). The
    recipe has set its own options."""
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
    own_reset(engine, idle)
    return engine


def _refuse_missing_file(engine: Engine, url: str) -> None:
    """Checked at each connect (not when the engine is made: ``open_store`` connects
    nothing, and callers that tolerate an unreadable queue catch the error at first use)."""

    @event.listens_for(engine, "do_connect")
    def _exists(*_: Any) -> None:
        missing = missing_file(url)
        if missing is not None:
            from migrate_cron.errors import SchemaMissing

            raise SchemaMissing(
                f"no database yet: {missing} does not exist ({display_url(url)}) — create it "
                "with `migrate-cron db upgrade`, or give --database-url"
            )
