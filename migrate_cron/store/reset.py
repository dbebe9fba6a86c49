"""What a connection goes through on its way back to the pool: the rollback SQLAlchemy does by
default, except that a connection the server closed meanwhile is dropped with one log line.

SQLAlchemy's pool rolls back every connection returned to it. When that rollback fails — the
server closed the connection between the COMMIT and the return (``KILL CONNECTION``,
``pg_terminate_backend``, a failover, our own deadline in ``deadline.py``) — the pool logs
"Exception during reset or similar" at ERROR with the traceback on the ``sqlalchemy.pool``
logger, and Python prints that on stderr when nobody configured logging: a traceback in a
worker's log for what is an ordinary outage (#30, item 11). The documented way to own the
reset is ``pool_reset_on_return=None`` and a ``PoolEvents.reset`` listener that rolls back
itself (SQLAlchemy, "Connection Pooling" → "Reset On Return" → "Custom Reset-on-Return
Schemes": https://docs.sqlalchemy.org/en/20/core/pooling.html#pool-reset-on-return). Ours
rolls back as the default does, skipping it where SQLAlchemy would (the connection's
transaction was already ended); if the rollback fails, it invalidates the connection (the pool
opens a new one on the next checkout, as it does after any disconnect) and says so in one line
on the ``migrate_cron.store`` logger, which the worker and the scheduler write into their own
log (``logline.route_library_logs``).

SQLAlchemy rolls back even after a COMMIT (only a transaction still open when the connection
closes counts as reset). psycopg's ``rollback()`` sends nothing when libpq says the session is
idle; PyMySQL's always sends ROLLBACK, one more round trip after every transaction on
MySQL/MariaDB — as many as the transaction's own statement for an enqueue. A dialect may
therefore pass ``idle``: a test, on the driver's connection, that the server's last answer
said no transaction is open; the rollback is then skipped (it would change nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event

from migrate_cron.config import mask_url
from migrate_cron.store.faults import first_line

log = logging.getLogger("migrate_cron.store")

#: ``create_engine`` keyword that turns SQLAlchemy's own reset off (``own_reset`` replaces it).
NO_DEFAULT_RESET = {"pool_reset_on_return": None}


def own_reset(engine: Engine, idle: Callable[[Any], bool] | None = None) -> None:
    """Roll back ``engine``'s connections on their return; drop those that cannot be. With
    ``idle``, a connection it says holds no transaction is returned as it is."""

    def reset(dbapi_conn: Any, record: Any, state: Any) -> None:
        if idle is not None and idle(dbapi_conn):
            return
        _reset(dbapi_conn, record, state)

    event.listen(engine, "reset", reset)


def _reset(dbapi_conn: Any, record: Any, state: Any) -> None:
    if state.transaction_was_reset or not state.asyncio_safe:
        return
    try:
        dbapi_conn.rollback()
    except Exception as exc:
        record.invalidate(exc)
        log.warning(
            "dropped a database connection that could not be reset (%s: %s); "
            "the next use opens a new one",
            type(exc).__name__,
            mask_url(first_line(exc))[:300],
        )
