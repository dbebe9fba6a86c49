"""When this worker last got its database back — what the reaper waits on after an outage.

While the database is away no lease can be renewed, so after an outage longer than the lease
every lease has run out, those of living workers too. A reaper that took them back at once
would hand jobs to the next claim before their owners could renew the leases or write the
outcomes they hold (issue #30: a 45 s PostgreSQL outage ran 12 jobs twice, 30 s of a full
SQLite disk 29). So the reaper counts leases again from the database's return: it reaps only
once ``lease`` seconds have passed since this worker reached the database again — time for
every living worker's heartbeat, which retries at least once per interval, to renew its
leases, and for its finisher to write what it holds.

"Back" is the first call that succeeds after one that failed (any thread of the worker), or
after a gap longer than ``gap`` seconds without any call completing: a database that froze
without failing (every call hung, then all returned at once) is an outage too. The worker's
threads complete a call at least once per heartbeat interval (the reaper's turn), so a gap
means the database, not the worker, was stuck.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class Contact:
    def __init__(
        self,
        gap: float,
        *,
        on_back: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._gap = gap
        self._clock = clock
        self._on_back = on_back
        self._lock = threading.Lock()
        self._down = False
        self._last_ok: float | None = None
        self._back_at = -math.inf

    def failed(self) -> None:
        """A database call failed as an outage does."""
        with self._lock:
            self._down = True

    def ok(self) -> None:
        """A database call succeeded."""
        now = self._clock()
        with self._lock:
            stalled = self._last_ok is not None and now - self._last_ok > self._gap
            back = self._down or stalled
            self._down = False
            self._last_ok = now
            if back:
                self._back_at = now
        if back:
            self._on_back()

    def back_for(self) -> float:
        """Seconds since the database answered again after the last outage (inf: none seen);
        0 while it is still away."""
        with self._lock:
            if self._down:
                return 0.0
            return self._clock() - self._back_at
