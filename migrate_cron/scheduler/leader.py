"""Leadership among several scheduler processes: a lease row, not an advisory lock.

Advisory locks live on a connection, survive its return to SQLAlchemy's pool and break behind
PgBouncer; a lease row (``Store.acquire_lease``) works on every backend and its expiry is on the
database's clock. The leader renews every ``ttl / 3`` seconds; standbys try every ``ttl / 5``,
so a standby takes over at most ``ttl + ttl / 5`` after the leader's last renewal.

Leadership only saves work: the unique slot key is what guarantees one job per slot, so a
split brain (two processes that both believe they lead) enqueues nothing twice.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from migrate_cron.store.leases import SCHEDULER_LEASE

DEFAULT_LEASE_NAME = SCHEDULER_LEASE
DEFAULT_TTL = 15.0


class LeaseStore(Protocol):
    def acquire_lease(self, name: str, holder: str, ttl: float) -> bool: ...

    def release_lease(self, name: str, holder: str) -> bool: ...

    def lease_holder(self, name: str) -> tuple[str, datetime] | None: ...


def default_holder() -> str:
    """host:pid:random — unique per process, readable in ``lease_holder``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class Leadership:
    """Tracks whether this process holds the lease and when to renew or retry it."""

    store: LeaseStore
    ttl: float = DEFAULT_TTL
    name: str = DEFAULT_LEASE_NAME
    holder: str = field(default_factory=default_holder)
    monotonic: Callable[[], float] = time.monotonic
    is_leader: bool = False
    _next_try: float = field(default=float("-inf"), repr=False)

    def __post_init__(self) -> None:
        if self.ttl <= 0:
            raise ValueError("the lease TTL must be positive")

    @property
    def renew_interval(self) -> float:
        return self.ttl / 3

    @property
    def retry_interval(self) -> float:
        return self.ttl / 5

    def ensure(self) -> bool:
        """Renew (leader) or try to take (standby) the lease when it is time; True if leading.

        A database error drops leadership at once and propagates: a leader that cannot renew
        must assume a standby will take over when the lease runs out.
        """
        now = self.monotonic()
        if now < self._next_try:
            return self.is_leader
        try:
            self.is_leader = self.store.acquire_lease(self.name, self.holder, self.ttl)
        except Exception:
            self.is_leader = False
            self._next_try = float("-inf")
            raise
        self._next_try = now + (self.renew_interval if self.is_leader else self.retry_interval)
        return self.is_leader

    def leader(self) -> str | None:
        """Who holds the lease now, as the database says (None if nobody, or unknown)."""
        try:
            row = self.store.lease_holder(self.name)
        except Exception:
            return None
        return row[0] if row else None

    def seconds_until_next_try(self) -> float:
        return max(0.0, self._next_try - self.monotonic())

    def drop(self) -> None:
        """Forget leadership locally (after a database error); the next ensure() re-acquires."""
        self.is_leader = False
        self._next_try = float("-inf")

    def release(self) -> bool:
        """Give the lease up so a standby takes over at once (graceful shutdown)."""
        was = self.is_leader
        self.is_leader = False
        self._next_try = float("-inf")
        return self.store.release_lease(self.name, self.holder) if was else False
