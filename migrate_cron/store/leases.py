"""Named leases (scheduler leader, reaper turn): a row taken with insert-if-absent and renewed
by a timed UPDATE on the database clock. Works on every backend and behind PgBouncer, unlike
advisory locks, which survive a return to the pool."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    delete,
    or_,
    select,
    update,
)

from migrate_cron.store.base import StoreBase


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
