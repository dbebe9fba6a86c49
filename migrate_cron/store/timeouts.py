"""How long a connection may take, per dialect: the one copy of the numbers (#19).

Two callers read them: ``engine.py`` (every SQLAlchemy engine) and ``direct.py`` (the lean
``enqueue`` from cron, which talks to the driver without SQLAlchemy). Both must give up on
the same database after the same time, so the values and their environment variables live
here, in a module that imports nothing but the standard library.

- Every connection attempt gives up after ``MIGRATE_CRON_CONNECT_TIMEOUT`` seconds (default
  10, whole seconds, at least 1: libpq and PyMySQL take integers).
- MySQL/MariaDB reads and writes give up after ``MIGRATE_CRON_IO_TIMEOUT`` seconds (default
  120; 0 turns it off).
- PostgreSQL statements are cut by the server after ``MIGRATE_CRON_STATEMENT_TIMEOUT``
  seconds when it is set (off by default: ``db upgrade`` on a large table may take long).
- SQLite waits up to 30 s for another writer's lock.
"""

from __future__ import annotations

import os

from migrate_cron.errors import UsageError

SQLITE_BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_ENV = "MIGRATE_CRON_CONNECT_TIMEOUT"
IO_TIMEOUT_ENV = "MIGRATE_CRON_IO_TIMEOUT"
STATEMENT_TIMEOUT_ENV = "MIGRATE_CRON_STATEMENT_TIMEOUT"


def seconds(env: str, default: float) -> float:
    """The non-negative number of seconds in ``$env``, or ``default`` when unset or empty."""
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{env}={raw!r} is not a number of seconds") from None
    if value < 0:
        raise UsageError(f"{env}={raw!r} must not be negative")
    return value


def connect_timeout() -> int:
    """Seconds a connection attempt may take (an integer: what the drivers accept)."""
    return max(1, round(seconds(CONNECT_TIMEOUT_ENV, 10)))


def io_timeout() -> float:
    """Seconds a MySQL/MariaDB read or write may take; 0 means no limit."""
    return seconds(IO_TIMEOUT_ENV, 120)


def statement_options() -> str | None:
    """libpq ``options`` that make the server cut long statements, or None (the default)."""
    statement = seconds(STATEMENT_TIMEOUT_ENV, 0)
    return f"-c statement_timeout={round(statement * 1000)}" if statement else None
