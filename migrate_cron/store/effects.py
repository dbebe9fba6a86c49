"""The ``side_effects`` table: the ledger behind ``migrate-cron once`` and ``ledger.once``.

The row is written *before* the effect, by an insert only one caller can win (insert-if-absent
on the primary key); a key already there is taken over only by a conditional UPDATE on the state
its reader saw (``failed``, or ``done`` past ``expires_at``), so two callers racing for it
cannot both win either. Finishing is fenced on ``holder`` and ``attempts``: a run whose key was
forgotten and taken by another run meanwhile changes nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, select, update

from migrate_cron.errors import EffectInDoubt
from migrate_cron.store.base import StoreBase, aware
from migrate_cron.store.models import Effect, EffectClaim
from migrate_cron.vocabulary import EffectStatus

#: A key taken over again by another caller between our read and our UPDATE: read again, a
#: bounded number of times (each round means someone else made progress).
_MAX_ROUNDS = 5


class EffectOps(StoreBase):
    """Named operations on the side-effect ledger."""

    def effect_begin(
        self,
        key: str,
        *,
        holder: str,
        job_id: int | None = None,
        retry_attempted: bool = False,
    ) -> EffectClaim:
        """Record ``attempted`` for ``key`` unless another run holds it or it is done.

        Commits before returning, so the mark survives whatever the effect does to this
        process. ``retry_attempted`` takes a key left ``attempted`` too (a person checked that
        the effect did not happen).
        """
        for _ in range(_MAX_ROUNDS):
            with self.transaction() as conn:
                claim = self._effect_try(conn, key, holder, job_id, retry_attempted)
            if claim is not None:
                return claim
        raise RuntimeError(f"side effect {key!r}: taken over {_MAX_ROUNDS} times while we looked")

    def _effect_try(
        self,
        conn: Connection,
        key: str,
        holder: str,
        job_id: int | None,
        retry_attempted: bool,
    ) -> EffectClaim | None:
        table = self.tables.side_effects
        values = {
            "key": key,
            "status": EffectStatus.ATTEMPTED,
            "holder": holder,
            "job_id": job_id,
            "attempts": 1,
            "attempted_at": self.now_sql(),
        }
        if self._insert_if_absent(conn, table, values, ("key",)) is not None:
            return EffectClaim(True, self._effect_row(conn, key))
        seen = self._effect_row(conn, key)
        if seen.status == EffectStatus.DONE and not self._expired(conn, seen):
            return EffectClaim(False, seen)
        if seen.status == EffectStatus.ATTEMPTED and not retry_attempted:
            return EffectClaim(False, seen)
        taken = conn.execute(
            update(table)
            .where(
                table.c.key == key,
                table.c.status == seen.status,
                table.c.attempts == seen.attempts,
            )
            .values(
                status=EffectStatus.ATTEMPTED,
                holder=holder,
                job_id=job_id,
                attempts=table.c.attempts + 1,
                exit_code=None,
                attempted_at=self.now_sql(),
                finished_at=None,
                expires_at=None,
            )
        )
        if taken.rowcount != 1:
            return None  # another caller took it between our read and our write
        return EffectClaim(True, self._effect_row(conn, key))

    def _expired(self, conn: Connection, effect: Effect) -> bool:
        if effect.expires_at is None:
            return False
        now = conn.execute(select(self.now_sql())).scalar_one()
        return aware(now) >= effect.expires_at

    def _effect_row(self, conn: Connection, key: str) -> Effect:
        table = self.tables.side_effects
        row = conn.execute(select(*table.c).where(table.c.key == key)).one()
        return _effect(row)

    def effect_finish(
        self,
        key: str,
        *,
        holder: str,
        attempts: int,
        ok: bool,
        exit_code: int | None = None,
        ttl: float | None = None,
    ) -> bool:
        """Record how the effect ended: ``done`` (expiring after ``ttl`` seconds when given)
        or ``failed`` (a later call may run it again). False when the key is no longer ours."""
        table = self.tables.side_effects
        with self.transaction() as conn:
            result = conn.execute(
                update(table)
                .where(
                    table.c.key == key,
                    table.c.status == EffectStatus.ATTEMPTED,
                    table.c.holder == holder,
                    table.c.attempts == attempts,
                )
                .values(
                    status=EffectStatus.DONE if ok else EffectStatus.FAILED,
                    exit_code=exit_code,
                    finished_at=self.now_sql(),
                    expires_at=self.after_sql(ttl) if ok and ttl is not None else None,
                )
            )
        return result.rowcount == 1

    def effect_record(
        self, conn: Connection, key: str, *, holder: str | None = None, ttl: float | None = None
    ) -> bool:
        """In the caller's transaction: record ``key`` as ``done`` now; False when it is done
        already (unexpired). The row commits or rolls back with the caller's own writes, so a
        database effect made in the same transaction happens exactly once. A concurrent caller
        with the same key waits on the first one's insert and then sees it done."""
        table = self.tables.side_effects
        values: dict[str, Any] = {
            "key": key,
            "status": EffectStatus.DONE,
            "holder": holder,
            "attempts": 1,
            "attempted_at": self.now_sql(),
            "finished_at": self.now_sql(),
            "expires_at": self.after_sql(ttl) if ttl is not None else None,
        }
        if self._insert_if_absent(conn, table, values, ("key",)) is not None:
            return True
        seen = self._effect_row(conn, key)
        if seen.status == EffectStatus.DONE and not self._expired(conn, seen):
            return False
        if seen.status == EffectStatus.ATTEMPTED:
            raise EffectInDoubt(seen.key, seen.holder, seen.attempted_at)
        taken = conn.execute(
            update(table)
            .where(
                table.c.key == key,
                table.c.status == seen.status,
                table.c.attempts == seen.attempts,
            )
            .values(
                {
                    **{k: v for k, v in values.items() if k != "key"},
                    "attempts": table.c.attempts + 1,
                    "exit_code": None,
                }
            )
        )
        return taken.rowcount == 1

    def effect_get(self, key: str) -> Effect | None:
        table = self.tables.side_effects
        with self.transaction(readonly=True) as conn:
            row = conn.execute(select(*table.c).where(table.c.key == key)).one_or_none()
        return None if row is None else _effect(row)

    def effect_forget(self, key: str) -> Effect | None:
        """Delete the key's row (whatever its state); returns what it was, None if absent."""
        table = self.tables.side_effects
        with self.transaction() as conn:
            row = conn.execute(select(*table.c).where(table.c.key == key)).one_or_none()
            if row is None:
                return None
            conn.execute(delete(table).where(table.c.key == key))
        return _effect(row)


def _effect(row: Any) -> Effect:
    """A ledger row as the store returns it, its status read back as its member."""
    return Effect(**{**row._mapping, "status": EffectStatus(row.status)})
