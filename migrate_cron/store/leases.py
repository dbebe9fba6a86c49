"""Named leases (scheduler leader, reaper turn): a row taken with insert-if-absent and renewed
by a timed UPDATE on the database clock. Works on every backend and behind PgBouncer, unlike
advisory locks, which survive a return to the pool."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Connection,
    delete,
    or_,
    select,
    update,
)

from migrate_cron.store.actions import ActionOps, Actor
from migrate_cron.store.base import StoreBase
from migrate_cron.vocabulary import Action


class LeaseOps(StoreBase):
    """Take, renew, release and read named leases."""

    def acquire_lease(self, name: str, holder: str, ttl: float) -> bool:
        """Take or renew the named lease; True if ``holder`` holds it for ``ttl`` s now."""
        leases = self.tables.leases
        with self.transaction() as conn:
            res = conn.execute(
                update(leases)
                .where(
                    leases.c.name == name,
                    or_(leases.c.holder == holder, leases.c.expires_at < self.now_sql()),
                )
                .values(holder=holder, expires_at=self.after_sql(ttl))
            )
            if res.rowcount == 1:
                return True
            created = self._insert_if_absent(
                conn,
                leases,
                {"name": name, "holder": holder, "expires_at": self.after_sql(ttl)},
                ("name",),
            )
            return created is not None

    def release_lease(self, name: str, holder: str) -> bool:
        leases = self.tables.leases
        with self.transaction() as conn:
            res = conn.execute(
                delete(leases).where(leases.c.name == name, leases.c.holder == holder)
            )
            return res.rowcount == 1

    def lease_holder(self, name: str) -> tuple[str, datetime] | None:
        leases = self.tables.leases
        with self.transaction(readonly=True) as conn:
            row = conn.execute(
                select(leases.c.holder, leases.c.expires_at).where(leases.c.name == name)
            ).first()
        return (row.holder, row.expires_at) if row else None


#: The scheduler leader's lease (``scheduler/leader.py`` takes it; ``metrics`` reads it).
SCHEDULER_LEASE = "migrate-cron-scheduler"
#: The workers' shared reaper turn (``worker/heartbeat.py``): renewed every ``--heartbeat`` by
#: one living worker, so it is also the queue's sign that some worker runs (``verify``).
REAPER_LEASE = "reaper"
#: The ``leases`` rows that pause a kind (``paused:KIND``) or the scheduler.
PAUSE_PREFIX = "paused:"
SCHEDULER_PAUSE = "@scheduler"


class PauseOps(ActionOps):
    """Paused kinds (workers do not claim them) and a paused scheduler (it records no slot):
    one ``leases`` row each, so every worker and scheduler sees the same switch. With an
    ``actor``, each name is recorded in the action log in the same transaction (changed 1 if
    this call paused or resumed it, 0 if it already was)."""

    def pause(self, names: list[str], by: str, *, actor: Actor | None = None) -> list[str]:
        """Pause kinds (or ``SCHEDULER_PAUSE``); returns the ones newly paused."""
        from migrate_cron.store.claim import LOCK_ROW_EXPIRES

        leases = self.tables.leases
        fresh = []
        with self.transaction() as conn:
            for name in names:
                created = self._insert_if_absent(
                    conn,
                    leases,
                    {"name": PAUSE_PREFIX + name, "holder": by, "expires_at": LOCK_ROW_EXPIRES},
                    ("name",),
                )
                if created is not None:
                    fresh.append(name)
            self._record_names(conn, actor, Action.PAUSE, names, fresh)
        return fresh

    def resume(self, names: list[str], *, actor: Actor | None = None) -> list[str]:
        """Lift pauses; returns the ones that were paused."""
        leases = self.tables.leases
        lifted = []
        with self.transaction() as conn:
            for name in names:
                res = conn.execute(delete(leases).where(leases.c.name == PAUSE_PREFIX + name))
                if res.rowcount:
                    lifted.append(name)
            self._record_names(conn, actor, Action.RESUME, names, lifted)
        return lifted

    def _record_names(
        self,
        conn: Connection,
        actor: Actor | None,
        action: Action,
        names: list[str],
        changed: list[str],
    ) -> None:
        if actor is not None:
            rows = [
                {"kind": n, "job_id": None, "detail": None, "changed": int(n in changed)}
                for n in dict.fromkeys(names)
            ]
            self._record(conn, actor, action, rows)

    def paused(self) -> dict[str, str]:
        """Every pause: name (a kind, or ``SCHEDULER_PAUSE``) → who paused it."""
        leases = self.tables.leases
        with self.transaction(readonly=True) as conn:
            rows = conn.execute(
                select(leases.c.name, leases.c.holder).where(
                    leases.c.name.like(PAUSE_PREFIX.replace("_", "\\_") + "%", escape="\\")
                )
            ).all()
        return {r.name[len(PAUSE_PREFIX) :]: r.holder for r in rows}
