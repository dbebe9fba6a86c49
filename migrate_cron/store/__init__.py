"""The only package with SQL. ``open_store(url)`` picks the implementation for the database
(``dialects.DIALECTS``).

Every name loads lazily (``_LAZY``): ``Store`` and ``Listener`` because the CLI must not pay
for SQLAlchemy until it talks to a database (a ``worker --help`` starts in a quarter of a
second, not half); the value types because ``enqueue`` from cron (``direct.py``) needs only
``RunResult`` of them, and importing this package is the first thing it does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy import Engine

    from migrate_cron.clock import Clock
    from migrate_cron.store.base import Listener
    from migrate_cron.store.models import (
        CleanupResult,
        Job,
        JobState,
        KindStatus,
        QueueStatus,
        ReapResult,
        SlotStatus,
    )
    from migrate_cron.store.results import EnqueueResult, RunResult
    from migrate_cron.store.store import Store
    from migrate_cron.store.timeouts import Use

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
    "SlotWriter",
    "Store",
    "open_slot_writer",
    "open_store",
]

#: Where each exported name is defined, imported on first use.
_LAZY = {
    "CleanupResult": "migrate_cron.store.models",
    "Job": "migrate_cron.store.models",
    "JobState": "migrate_cron.store.models",
    "KindStatus": "migrate_cron.store.models",
    "QueueStatus": "migrate_cron.store.models",
    "ReapResult": "migrate_cron.store.models",
    "SlotStatus": "migrate_cron.store.models",
    "EnqueueResult": "migrate_cron.store.results",
    "RunResult": "migrate_cron.store.results",
    "Store": "migrate_cron.store.store",
    "Listener": "migrate_cron.store.base",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)


def open_store(
    url: str,
    prefix: str = "",
    clock: Clock | None = None,
    use: Use | None = None,
    **engine_kwargs: Any,
) -> Store:
    """Open a Store for ``url``. Nothing connects until the first operation. ``use`` sets how
    long a call may wait (``store.timeouts``); the default is ``Use.LONG``, for application
    code and maintenance."""
    from migrate_cron.config import validate_prefix
    from migrate_cron.store.engine import display_url, make_engine
    from migrate_cron.store.timeouts import Use

    engine = make_engine(url, use or Use.LONG, **engine_kwargs)
    store = _store_for(engine, validate_prefix(prefix), clock)
    store.url_safe = display_url(url)  # as the user typed it, not as we connect
    return store


def _store_for(engine: Engine, prefix: str, clock: Clock | None) -> Store:
    """The Store subclass of the engine's database (``dialects.DIALECTS``)."""
    from migrate_cron.store.dialects import dialect_for

    store: Store = dialect_for(engine.dialect.name).store_class()(engine, prefix, clock)
    return store


class SlotWriter(Protocol):
    """What ``enqueue`` writes a cron slot through: a ``Store``, or ``store.direct``'s writer."""

    def enqueue_run(
        self, job_name: str, scheduled_for: datetime, *, max_attempts: int,
        skip_if_running: bool = False, hold_if_running: bool = False,
    ) -> RunResult: ...  # fmt: skip

    def dispose(self) -> None: ...


def open_slot_writer(url: str, prefix: str = "") -> SlotWriter:
    """The writer for ``enqueue`` from cron: ``store.direct`` (the driver alone, no
    SQLAlchemy) when it fully understands ``url``, else the Store. A call the direct writer
    cannot serve (``direct.Unsupported``: nothing was written) goes to the Store, and so does
    every later call of this writer."""
    from migrate_cron.config import validate_prefix
    from migrate_cron.store.direct import Unsupported, open_writer

    try:
        direct = open_writer(url, validate_prefix(prefix))
    except Unsupported:
        return open_store(url, prefix=prefix)
    return _FallbackWriter(direct, url, prefix)


class _FallbackWriter:
    """The direct writer until it raises ``Unsupported``, the Store from then on."""

    def __init__(self, direct: SlotWriter, url: str, prefix: str) -> None:
        self._writer = direct
        self._url = url
        self._prefix = prefix
        self._fell_back = False

    def enqueue_run(
        self, job_name: str, scheduled_for: datetime, *, max_attempts: int,
        skip_if_running: bool = False, hold_if_running: bool = False,
    ) -> RunResult:  # fmt: skip
        from migrate_cron.store.direct import Unsupported

        if not self._fell_back:
            try:
                return self._writer.enqueue_run(
                    job_name, scheduled_for, max_attempts=max_attempts,
                    skip_if_running=skip_if_running, hold_if_running=hold_if_running,
                )  # fmt: skip
            except Unsupported:
                self._writer.dispose()
                self._writer = open_store(self._url, prefix=self._prefix)
                self._fell_back = True
        return self._writer.enqueue_run(
            job_name, scheduled_for, max_attempts=max_attempts, skip_if_running=skip_if_running,
            hold_if_running=hold_if_running,
        )  # fmt: skip

    def dispose(self) -> None:
        self._writer.dispose()
