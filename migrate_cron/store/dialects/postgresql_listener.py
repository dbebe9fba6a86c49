"""PostgreSQL's wake-ups: a connection of its own that LISTENs on the store's channel, so a
worker sleeps until an enqueue commits instead of polling."""

from __future__ import annotations

import contextlib
from typing import Any

from sqlalchemy import Engine

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.store.base import Listener
from migrate_cron.store.faults import first_line, read_only_server


class PostgresListener(Listener):
    """A dedicated autocommit connection that LISTENs; notifications arrive after commit."""

    def __init__(self, engine: Engine, channel: str, url_safe: str) -> None:
        raw = engine.raw_connection()
        # Take the driver connection before detaching: a detached fairy no longer exposes it.
        conn = raw.driver_connection
        assert conn is not None
        self._conn: Any = conn
        try:  # LISTEN while checked out: under the deadline of every use (``deadline.py``)
            self._conn.autocommit = True
            self._conn.execute(f'LISTEN "{channel}"')
        except Exception as exc:
            raw.invalidate()  # never back to the pool in autocommit
            if read_only_server(exc):  # a replica ("cannot execute LISTEN during recovery")
                raise DatabaseUnavailable(
                    f"cannot use the database {url_safe}: {first_line(exc)}"
                ) from exc
            raise
        raw.detach()  # never goes back to the pool with LISTEN active
        self._raw = raw

    def wait(self, timeout: float) -> bool:
        woken = False
        # notifies() holds the connection lock until the generator ends: finish it before
        # draining (a nested call from inside the loop deadlocks).
        for _ in self._conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
            woken = True
        if woken:  # drain anything else already queued so one burst is one wake-up
            for _ in self._conn.notifies(timeout=0, stop_after=1000):
                pass
        return woken

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
