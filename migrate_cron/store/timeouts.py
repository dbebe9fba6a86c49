"""How long a connection may take, per dialect: the one copy of the numbers (#19).

Two callers read them: ``engine.py`` (every SQLAlchemy engine) and ``direct.py`` (the lean
``enqueue`` from cron, which talks to the driver without SQLAlchemy). Both must give up on
the same database after the same time, so the values and their environment variables live
here, in a module that imports nothing but the standard library.

- Every connection attempt gives up after ``MIGRATE_CRON_CONNECT_TIMEOUT`` seconds when it is
  set (whole seconds, at least 1: libpq and PyMySQL take integers); unset, 10 for long uses
  and cron's ``enqueue``, 5 for quick and loop uses. It bounds the login too: libpq counts it
  in, and ``engine.py`` reads PyMySQL's greeting under it.
- A long use waits for an answer at most ``MIGRATE_CRON_IO_TIMEOUT`` seconds (default 120;
  0 turns it off): MySQL/MariaDB by the driver's socket timeouts, PostgreSQL by
  ``deadline.py`` (libpq has no read timeout).
- PostgreSQL statements are cut by the server after ``MIGRATE_CRON_STATEMENT_TIMEOUT``
  seconds when it is set (off by default: ``db upgrade`` on a large table may take long).
- SQLite waits up to 30 s for another writer's lock.

Per use (``Use``, ``limits``): how long a caller may wait depends on who waits. A person at
``status`` or ``jobs list``, Prometheus at a scrape (its default scrape timeout is 10 s) and
a worker's or scheduler's loop (a stuck call holds the loop, and SIGTERM waits for it) get
short limits; only cleanup and schema changes, where a long statement is legitimate, get
``MIGRATE_CRON_IO_TIMEOUT``. The numbers and why they are safe: docs/reliability.md, row 16.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum

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
    """Seconds a long use may wait for an answer (a MySQL/MariaDB read or write; a
    PostgreSQL operation); 0 means no limit."""
    return seconds(IO_TIMEOUT_ENV, 120)


def statement_options() -> str | None:
    """libpq ``options`` that make the server cut long statements, or None (the default)."""
    statement = seconds(STATEMENT_TIMEOUT_ENV, 0)
    return f"-c statement_timeout={round(statement * 1000)}" if statement else None


class Use(StrEnum):
    """What an engine's connections are for; each use has its own ``Limits``."""

    #: A person or a scraper waits: status, jobs, metrics, the web console, other commands.
    QUICK = "quick"
    #: The worker's and the scheduler's loops: short statements, and a call that hangs holds
    #: the loop (and SIGTERM) until it gives up.
    LOOP = "loop"
    #: Cleanup, schema changes and the library's ``open_store`` default: a long statement is
    #: legitimate here.
    LONG = "long"


#: Seconds a quick or loop connection may take to connect (login included) unless
#: ``MIGRATE_CRON_CONNECT_TIMEOUT`` says otherwise: half of Prometheus's scrape timeout.
SHORT_CONNECT = 5
#: Seconds a quick use waits for one answer: a scrape that connects (5 s) or finds its pooled
#: connection silent (5 s) still answers within Prometheus's 10 s.
QUICK_ANSWER = 5.0
#: Seconds a loop waits for one answer: ten times a claim or a heartbeat on a loaded server,
#: and the bound on how long SIGTERM waits for a frozen call.
LOOP_ANSWER = 10.0


@dataclass(frozen=True)
class Limits:
    """How long one use of a connection may wait for the database."""

    #: Seconds to connect: TCP, the server's greeting and the login.
    connect: int
    #: Seconds a call may wait for the server's answer; 0: no limit.
    answer: float


def limits(use: Use = Use.LONG) -> Limits:
    """The limits of ``use``. ``MIGRATE_CRON_CONNECT_TIMEOUT``, when set, is every use's
    connect limit; ``MIGRATE_CRON_IO_TIMEOUT`` is the answer limit of long uses."""
    if use is Use.LONG:
        return Limits(connect_timeout(), io_timeout())
    given = os.environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    connect = connect_timeout() if given else SHORT_CONNECT
    return Limits(connect, QUICK_ANSWER if use is Use.QUICK else LOOP_ANSWER)
