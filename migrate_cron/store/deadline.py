"""A deadline on every use of a PostgreSQL connection, because libpq has no read timeout.

psycopg waits for an answer as long as the socket stays open, and a server, proxy or firewall
that keeps the TCP session and relays nothing (a frozen VM, a stuck load balancer, our tests'
``StallingProxy``) keeps it open for ever. The server's ``statement_timeout`` cannot help (the
server is not the one stuck), and TCP keepalives and ``tcp_user_timeout`` are answered by
whatever holds the session. PyMySQL's ``read_timeout`` bounds MySQL/MariaDB; for PostgreSQL a
watchdog does the same: a connection still out of the pool past its deadline has its socket
shut down. The driver's wait then ends ("server closed the connection unexpectedly"),
SQLAlchemy invalidates the connection (the next use opens a new one), and
``StoreBase.translate`` says what really happened: no answer within N s.

The deadline runs from the checkout to the checkin, so it covers a store operation whole: its
statements, its COMMIT and the pool's reset on return (our operations are one short
transaction each). It is armed again when a new connection is made (login is libpq's
``connect_timeout``; SQLAlchemy's first queries on it are ours to bound).

One daemon thread per process, started on first use, looks twice a second (a deadline is kept
to within a quarter of a second); arming and disarming cost a lock and a dict entry per
transaction, and only pool events are used, so SQLAlchemy's execute path is unchanged
(``postgresql_driver.driver_may_run`` still finds no engine events).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, event

#: Seconds between two looks at the deadlines.
_TICK = 0.25


@dataclass(frozen=True)
class _Armed:
    conn: Any
    deadline: float
    limit: float
    thread: int
    #: Whether a cut is reported to ``thread`` (a checkout: the error it gets is ours to name).
    report: bool


class Watchdog:
    """Cuts connections whose use outlives its deadline; remembers, per thread, that it did."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: dict[int, _Armed] = {}
        self._cut: dict[int, float] = {}  # thread id -> the limit it overran
        self._thread: threading.Thread | None = None

    def arm(self, conn: Any, limit: float, *, report: bool = True) -> None:
        """Start ``conn``'s deadline: ``limit`` seconds from now."""
        me = threading.get_ident()
        armed = _Armed(conn, time.monotonic() + limit, limit, me, report)
        with self._lock:
            self._cut.pop(me, None)  # a mark is only for the error before the next use
            self._armed[id(conn)] = armed
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="migrate-cron-deadline", daemon=True
                )
                self._thread.start()

    def disarm(self, conn: Any) -> None:
        if conn is None:
            return
        with self._lock:
            self._armed.pop(id(conn), None)

    def overran(self) -> float | None:
        """The limit this thread's last use overran (and was cut for), once; else None."""
        with self._lock:
            return self._cut.pop(threading.get_ident(), None)

    def _watch(self) -> None:
        while True:
            time.sleep(_TICK)
            now = time.monotonic()
            with self._lock:
                due = [key for key, armed in self._armed.items() if armed.deadline <= now]
                for key in due:
                    armed = self._armed.pop(key)
                    # Under the lock: a use that ends now waits for the cut to finish, so the
                    # socket shut down is never one the pool has handed out again.
                    if _shut_down(armed.conn) and armed.report:
                        self._cut[armed.thread] = armed.limit


def _shut_down(conn: Any) -> bool:
    """Shut ``conn``'s socket down (both ways) without closing the driver's descriptor: its
    blocked wait wakes up with end-of-file. False if it is closed already."""
    try:
        fd = conn.fileno()
        copy = socket.socket(fileno=os.dup(fd))
    except Exception:  # closed meanwhile: psycopg raises OperationalError
        return False
    with contextlib.closing(copy), contextlib.suppress(OSError):
        copy.shutdown(socket.SHUT_RDWR)
    return True


WATCHDOG = Watchdog()


def watch(engine: Engine, limit: float) -> None:
    """Give every use of ``engine``'s connections ``limit`` seconds (0: none)."""
    if limit <= 0:
        return

    def on_new(dbapi_conn: Any, _record: Any) -> None:
        WATCHDOG.arm(dbapi_conn, limit, report=False)

    def on_checkout(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        WATCHDOG.arm(dbapi_conn, limit)

    def on_release(dbapi_conn: Any, *_: Any) -> None:
        WATCHDOG.disarm(dbapi_conn)

    # Before SQLAlchemy's own first queries on a new connection (``insert``).
    event.listen(engine, "first_connect", on_new, insert=True)
    event.listen(engine, "connect", on_new, insert=True)
    event.listen(engine, "checkout", on_checkout)
    for name in ("checkin", "detach", "invalidate", "close"):
        event.listen(engine, name, on_release)
