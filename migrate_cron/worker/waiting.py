"""How the claim loop waits: for new work (woken by a LISTEN wake-up where the store offers
it, else an idle backoff), and between tries while the database is away (cut short when another
thread reaches it again). A LISTEN connection that fails is dropped for polling and opened
again a ``poll`` later; the loop never stops over it."""

from __future__ import annotations

import threading
import time

from migrate_cron.store import Listener
from migrate_cron.store.base import describe_error
from migrate_cron.worker.backoff import IdleBackoff
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.outage import OUTAGE_ERRORS
from migrate_cron.worker.settings import WorkerSettings
from migrate_cron.worker.source import WorkSource

#: Longest uninterruptible wait (LISTEN has no way to be woken from outside).
SLICE = 0.25


class Waiting:
    """The claim loop's waits and the LISTEN connection they use; one per worker, used by the
    claim loop's thread only (``back`` from any thread)."""

    def __init__(
        self,
        store: WorkSource,
        settings: WorkerSettings,
        log: WorkerLog,
        stopping: threading.Event,
    ) -> None:
        self.store = store
        self.settings = settings
        self.log = log
        self._stopping = stopping
        self._db_back = threading.Event()  # another thread reached the database again
        self._listener: Listener | None = None
        self._listener_retry_at = 0.0

    def back(self) -> None:
        """Another thread reached the database again: end a ``wait_out`` now."""
        self._db_back.set()

    def wait_out(self, seconds: float) -> None:
        """The claim loop's wait between tries while the database is away: ``seconds``, or
        until it is stopped or another thread reached the database again."""
        deadline = time.monotonic() + seconds
        while not self._stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._db_back.wait(min(SLICE, remaining)):
                self._db_back.clear()
                return

    def idle(self, idle: IdleBackoff) -> None:
        """Wait for work: a wake-up where the store can LISTEN (with ``poll`` as a safety net
        for delayed jobs and retries coming due), else the idle backoff."""
        if self._listener is None:
            self._stopping.wait(idle.next())
            return
        deadline = time.monotonic() + self.settings.poll
        while not self._stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                if self._listener.wait(min(SLICE, remaining)):
                    return
            except OUTAGE_ERRORS as exc:
                self.log.event(
                    "listen-lost", f"LISTEN connection: {describe_error(exc)}; polling until back"
                )
                self.close()
                self._listener_retry_at = time.monotonic() + self.settings.poll
                return

    def reopen(self) -> None:
        """Open the LISTEN connection again if it is wanted, missing, and due for a try."""
        if self._listener is None:
            self.open()

    def open(self) -> None:
        if not self._wants_listener():
            return
        try:
            self._listener = self.store.listener()
        except OUTAGE_ERRORS as exc:
            why = describe_error(exc)
            self.log.event("listen-lost", f"cannot LISTEN: {why}; polling meanwhile")
            self._listener = None
            self._listener_retry_at = time.monotonic() + self.settings.poll

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _wants_listener(self) -> bool:
        """LISTEN where the store can (``supports_listen``), except in ``once`` mode (it
        exits instead of idling)."""
        return (
            self.store.supports_listen
            and not self.settings.once
            and time.monotonic() >= self._listener_retry_at
        )
