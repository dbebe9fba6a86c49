"""Surviving a database that goes away: one log line per failed try, a capped backoff, and a
line when it is back. Every loop of the worker (claim, heartbeat, finisher) has one."""

from __future__ import annotations

from sqlalchemy import exc as sa_exc

from migrate_cron.errors import DatabaseUnavailable, SchemaMissing
from migrate_cron.store.base import describe_error
from migrate_cron.worker.log import WorkerLog

# What a restart, failover or network cut looks like from here. psycopg's own errors come from
# the LISTEN connection, which SQLAlchemy does not wrap.
# (Deadlocks and serialization failures are OperationalErrors too: retrying is right.) Other
# driver errors — bad data, constraint violations — are not outages and are not retried forever.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    DatabaseUnavailable,
    SchemaMissing,
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,
    OSError,
)
try:
    import psycopg

    OUTAGE_ERRORS = (*OUTAGE_ERRORS, psycopg.OperationalError, psycopg.InterfaceError)
except ImportError:  # pragma: no cover - psycopg is a dependency
    pass


class Outage:
    def __init__(self, log: WorkerLog, what: str, *, low: float = 0.5, cap: float = 30.0) -> None:
        self._log = log
        self._what = what
        self._low = low
        self._cap = max(low, cap)
        self._next = low
        self._down = False
        self._logged_wait = 0.0

    def failed(self, exc: BaseException) -> float:
        """Log the failure; returns how long to wait before the next try."""
        wait = self._next
        self._next = min(self._cap, self._next * 2)
        if not self._down or wait > self._logged_wait:
            # One line when the outage starts and one per backoff step, not one per retry.
            self._log.event(
                "db-unavailable", f"{self._what}: {describe_error(exc)}; retrying in {wait:.1f}s"
            )
            self._logged_wait = wait
        self._down = True
        return wait

    def ok(self) -> None:
        """The database answered a call: only then is an outage over (a round that asked
        nothing, or a call that was never sent, proves nothing)."""
        if self._down:
            self._log.event("db-available", f"{self._what}: the database answers again")
            self._down = False
            self._logged_wait = 0.0
        self._next = self._low
