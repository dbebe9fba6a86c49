"""The only package with SQL. ``open_store(url)`` picks the implementation for the dialect.

``Store`` and ``Listener`` load lazily: the CLI imports the value types of ``store.models``
(``JobState`` …) at start-up, and must not pay for SQLAlchemy until it talks to a database
(a ``worker --help`` or an ``enqueue`` from cron starts in a quarter of a second, not half).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from migrate_cron.clock import Clock
from migrate_cron.store.models import (
    CleanupResult,
    EnqueueResult,
    Job,
    JobState,
    KindStatus,
    QueueStatus,
    ReapResult,
    RunResult,
    SlotStatus,
)

if TYPE_CHECKING:
    from migrate_cron.store.base import Listener
    from migrate_cron.store.store import Store

__all__ = [
    "CleanupResult",
    "EnqueueResult",
    "Job",
    "JobState",
    "KindStatus",
    "Listener",
    "QueueStatus",
    "ReapResult",
    "RunResult",
    "SlotStatus",
    "Store",
    "open_store",
]


def __getattr__(name: str) -> Any:
    if name == "Store":
        from migrate_cron.store.store import Store

        return Store
    if name == "Listener":
        from migrate_cron.store.base import Listener

        return Listener
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_store(
    url: str, prefix: str = "", clock: Clock | None = None, **engine_kwargs: Any
) -> Store:
    """Open a Store for ``url``. Nothing connects until the first operation."""
    from migrate_cron.config import validate_prefix
    from migrate_cron.store.engine import dialect_family, make_engine

    engine = make_engine(url, **engine_kwargs)
    family = dialect_family(engine.dialect.name)
    prefix = validate_prefix(prefix)
    if family == "postgresql":
        from migrate_cron.store.postgresql import PostgresStore

        return PostgresStore(engine, prefix, clock)
    if family == "mysql":
        from migrate_cron.store.mysql import MySQLStore

        return MySQLStore(engine, prefix, clock)
    if family == "sqlite":
        from migrate_cron.store.sqlite import SQLiteStore

        return SQLiteStore(engine, prefix, clock)
    from migrate_cron.errors import UsageError

    raise UsageError(
        f"unsupported database {engine.dialect.name!r}: use PostgreSQL, MySQL/MariaDB or SQLite"
    )
