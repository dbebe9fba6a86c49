"""Bounded time per use (``store/timeouts.py``), the PostgreSQL deadline (``store/deadline.py``)
and the pool's reset of a connection the server closed (``store/reset.py``).

The processes that must stay within these limits are tried whole in
``tests/faults/test_stalled_database.py``; here each piece is checked alone, on real servers
behind the stalling proxy where a database is involved.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.logline import LIBRARY_EVENT, LIBRARY_LOGGERS, route_library_logs
from migrate_cron.store import open_store
from migrate_cron.store.deadline import Watchdog
from migrate_cron.store.dialects import driver_loggers
from migrate_cron.store.timeouts import Limits, Use, limits
from tests.conftest import fresh_store
from tests.faults.proxy import StallingProxy, upstream_of, via_proxy


def test_each_use_has_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIGRATE_CRON_CONNECT_TIMEOUT", raising=False)
    monkeypatch.delenv("MIGRATE_CRON_IO_TIMEOUT", raising=False)
    assert limits(Use.QUICK) == Limits(connect=5, answer=5.0)
    assert limits(Use.LOOP) == Limits(connect=5, answer=10.0)
    assert limits(Use.LONG) == limits() == Limits(connect=10, answer=120.0)
    # Set, the connect timeout is every use's; the I/O timeout is the long uses' alone.
    monkeypatch.setenv("MIGRATE_CRON_CONNECT_TIMEOUT", "3")
    monkeypatch.setenv("MIGRATE_CRON_IO_TIMEOUT", "0")
    assert limits(Use.QUICK) == Limits(connect=3, answer=5.0)
    assert limits(Use.LONG) == Limits(connect=3, answer=0.0)


class _Socket:
    """What the watchdog needs of a driver connection: ``fileno()``."""

    def __init__(self, sock: socket.socket) -> None:
        self.fileno = sock.fileno


def test_the_watchdog_cuts_a_use_past_its_deadline_and_only_that() -> None:
    dog = Watchdog()
    ours, server = socket.socketpair()
    spared, spared_server = socket.socketpair()
    try:
        conn, other = _Socket(ours), _Socket(spared)
        dog.arm(conn, 0.3)
        dog.arm(other, 0.3)
        dog.disarm(other)  # its use ended in time
        started = time.monotonic()
        ours.settimeout(10)
        assert ours.recv(1) == b""  # woken by the shutdown: no data was ever sent
        assert 0.3 <= time.monotonic() - started < 3
        assert dog.overran() == 0.3
        assert dog.overran() is None  # told once
        spared.settimeout(1.0)  # well past its deadline and the watchdog's next look
        with pytest.raises(TimeoutError):
            spared.recv(1)
    finally:
        for s in (ours, server, spared, spared_server):
            s.close()


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_a_call_left_unanswered_gives_up_after_the_answer_limit(
    backend: str, db_url: str, table_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pooled connection whose database went silent: the call ends after the answer limit
    (PostgreSQL: our deadline; MariaDB: PyMySQL's read timeout), and once the database is
    back the next call works on a new connection."""
    with fresh_store(db_url, table_prefix) as direct, StallingProxy(*upstream_of(db_url)) as proxy:
        direct.enqueue("k")
        monkeypatch.setenv("MIGRATE_CRON_IO_TIMEOUT", "1")
        store = open_store(via_proxy(db_url, proxy), prefix=table_prefix)  # Use.LONG
        try:
            assert store.count_jobs() == 1  # the pool holds a connection through the proxy
            proxy.freeze()
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailable) as caught:
                store.count_jobs()
            took = time.monotonic() - started
            assert 1.0 <= took < 1.0 + 3.0, f"gave up after {took:.1f}s"
            expected = "no answer within 1s" if backend == "postgresql" else "timed out"
            assert expected in str(caught.value)
            proxy.thaw()
            assert store.count_jobs() == 1
        finally:
            store.dispose()


def test_pymysql_reads_the_greeting_under_the_connect_limit(
    mariadb_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyMySQL reads the server's greeting under ``read_timeout``: the engine connects with
    the connect limit there and sets the answer limit once connected (its private attributes,
    ``engine._answer_after``; this fails if a PyMySQL release renames them)."""
    monkeypatch.setenv("MIGRATE_CRON_CONNECT_TIMEOUT", "2")
    with StallingProxy(*upstream_of(mariadb_database)) as proxy:
        store = open_store(via_proxy(mariadb_database, proxy), use=Use.LOOP)
        try:
            with store.engine.connect() as conn:
                raw: Any = conn.connection.dbapi_connection
                assert raw.connect_timeout == 2
                assert raw._read_timeout == raw._write_timeout == limits(Use.LOOP).answer
            store.engine.dispose()
            proxy.freeze()  # accepts, never greets: the answer limit (10 s) must not apply
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailable):
                store.count_jobs()
            assert time.monotonic() - started < 2 + 3
        finally:
            store.dispose()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def library_logs() -> Iterator[_Lines]:
    """What the store and SQLAlchemy log at WARNING and above, whatever routing a test before
    this one installed."""
    lines = _Lines()
    lines.setLevel(logging.WARNING)
    loggers = [logging.getLogger(name) for name in LIBRARY_LOGGERS]
    for logger in loggers:
        logger.addHandler(lines)
    try:
        yield lines
    finally:
        for logger in loggers:
            logger.removeHandler(lines)


def test_a_connection_killed_after_its_commit_is_dropped_with_one_line(
    mariadb_database: str, table_prefix: str, library_logs: _Lines
) -> None:
    """#30 item 11: the pool's rollback on return met a connection the server had closed and
    SQLAlchemy logged the traceback. Since our reset skips the rollback where PyMySQL last
    heard that no transaction is open (``test_reset.py``), the connection here holds one."""
    store = open_store(mariadb_database, prefix=table_prefix)
    try:
        conn = store.engine.raw_connection()
        cursor = conn.cursor()
        cursor.execute("START TRANSACTION")
        cursor.execute("SELECT CONNECTION_ID()")
        session = int(cursor.fetchone()[0])
        cursor.close()
        with store.engine.connect() as killer:
            killer.exec_driver_sql(f"KILL CONNECTION {session}")
        conn.close()  # the rollback on return fails: the connection is dropped
        [line] = library_logs.records
        assert line.name == "migrate_cron.store" and line.exc_info is None
        assert "could not be reset" in line.getMessage()
        assert "Lost connection" in line.getMessage()
        with store.engine.connect() as again:  # the pool opens a new one
            assert again.exec_driver_sql("SELECT 1").scalar_one() == 1
        assert len(library_logs.records) == 1
    finally:
        store.dispose()


def test_library_warnings_become_one_line_of_the_process_log() -> None:
    """``route_library_logs``: what the worker and the scheduler install."""
    seen: list[tuple[str, str]] = []
    loggers = [logging.getLogger(name) for name in (*LIBRARY_LOGGERS, *driver_loggers())]
    before = [(list(lg.handlers), lg.propagate) for lg in loggers]
    try:
        route_library_logs(lambda event, message: seen.append((event, message)), driver_loggers())
        try:
            raise OSError("Lost connection to MySQL server during query\nsecond line")
        except OSError:
            logging.getLogger("sqlalchemy.pool.impl.QueuePool").error(
                "Exception during reset or similar", exc_info=True
            )
        logging.getLogger("migrate_cron.store").info("below the level: not written")
        # What psycopg says when the server goes away inside a pipeline (seen in the
        # failover test's worker log as a bare stderr line before it was routed).
        logging.getLogger("psycopg").warning(
            "error ignored terminating %r: %s", "<psycopg.Pipeline [BAD]>", "the connection is lost"
        )
        assert seen == [
            (
                LIBRARY_EVENT,
                "sqlalchemy.pool.impl.QueuePool: Exception during reset or similar: "
                "OSError: Lost connection to MySQL server during query",
            ),
            (
                LIBRARY_EVENT,
                "psycopg: error ignored terminating '<psycopg.Pipeline [BAD]>': "
                "the connection is lost",
            ),
        ]
    finally:
        for logger, (handlers, propagate) in zip(loggers, before, strict=True):
            logger.handlers[:] = handlers
            logger.propagate = propagate
