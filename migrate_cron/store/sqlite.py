"""SQLite: the embedded default. Writers take the lock up front (BEGIN IMMEDIATE, see
``engine.py``), then claim with one ``UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING``.
SQLite has no SKIP LOCKED and needs none: one writer at a time. The database's clock is the
local clock, so "now" is bound from Python."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, literal, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from migrate_cron.store.base import Store
from migrate_cron.store.models import Job
from migrate_cron.store.schema import UTCDateTime


class SQLiteStore(Store):
    family = "sqlite"

    def _server_now(self) -> ColumnElement[datetime]:
        return literal(datetime.now(UTC), UTCDateTime())

    def _server_after(self, seconds: float) -> ColumnElement[datetime]:
        return literal(datetime.now(UTC) + timedelta(seconds=seconds), UTCDateTime())

    def _insert_if_absent(
        self, conn: Connection, table: Any, values: dict[str, Any], keys: Sequence[str]
    ) -> Any | None:
        pk = next(iter(table.primary_key.columns))
        stmt = (
            sqlite_insert(table)
            .values(**values)
            .on_conflict_do_nothing(index_elements=list(keys))
            .returning(pk)
        )
        return conn.execute(stmt).scalar_one_or_none()

    def _claim(
        self, conn: Connection, worker_id: str, n: int, lease: float, kinds: Sequence[str] | None
    ) -> list[Job]:
        job = self.tables.job
        picked = (
            select(job.c.id)
            .where(*self._ready_filter(kinds))
            .order_by(job.c.run_at, job.c.id)
            .limit(n)
            .scalar_subquery()
        )
        stmt = (
            update(job)
            .where(job.c.id.in_(picked))
            .values(**self._claim_values(worker_id, lease))
            .returning(*job.c)
        )
        return [self._job(r) for r in conn.execute(stmt)]
