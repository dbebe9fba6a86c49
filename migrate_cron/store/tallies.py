"""``job_tallies``: per (kind, what, hour) counts of what the queue did that no row keeps, and
the read of what the switch from cron has bought (``SwitchGains``).

Counts are written where the event happens, in the transaction that makes it: the cron slot's
write (``slot_write.py``: a duplicate fire, an overlap held back) and the scheduler's writes
(``runs.py``: missed slots and what the policy did with them). Each is one upsert of the
current hour's row on the database's clock, so any number of writers add up exactly and the
table stays small (one row per kind, event and hour at most). Whether a failed run was saved
by a retry needs no tally: ``job_attempts`` keeps every run.

A database at schema step 4 has no ``job_tallies``: nothing is counted and every count reads 0
(``console_enabled``); the queue works as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.models import SwitchGains
from migrate_cron.store.slot_write import hour_of
from migrate_cron.vocabulary import AttemptOutcome, Tally

#: Kinds per read statement (each brings its own "since").
CHUNK = 200

#: ``SwitchGains`` field of each tally.
FIELDS: dict[Tally, str] = {
    Tally.DUPLICATE_FIRE: "duplicate_fires",
    Tally.OVERLAP_HELD: "overlap_held",
    Tally.MISSED_RUN: "missed_run",
    Tally.MISSED_SKIPPED: "missed_skipped",
}


class TallyOps(AttemptOps):
    def _upsert_counts(self, conn: Connection, table: Any, values: dict[str, Any]) -> None:
        """Insert a ``job_tallies`` row, or add its ``count`` to the row with the same key:
        one statement, so concurrent writers never lose an increment. ``ON CONFLICT DO
        UPDATE`` through the dialect's insert construct (``_conflict_insert``); MySQL/MariaDB
        override it with ``ON DUPLICATE KEY UPDATE``."""
        stmt = self._conflict_insert(table).values(values)
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=list(table.primary_key.columns),
                set_={"count": table.c["count"] + stmt.excluded["count"]},
            )
        )

    def tally(self, kind: str, what: Tally, n: int = 1) -> None:
        """+``n`` on ``kind``'s ``what`` in the current hour (nothing on a step-4 database)."""
        with self.transaction() as conn:
            self._tally(conn, kind, what, n)

    def _tally(self, conn: Connection, kind: str, what: Tally, n: int = 1) -> None:
        """``tally`` in the caller's transaction: counted only if what it counts commits."""
        if n <= 0 or not self._has_console(conn):
            return
        values = {"kind": kind, "what": what.value, "period_start": self.hour_sql(), "count": n}
        self._upsert_counts(conn, self.tables.tallies, values)

    def switch_gains(self, since: Mapping[str, datetime | None]) -> dict[str, SwitchGains]:
        """Per kind of ``since`` (kind -> its switch; None: all on record), what the queue
        did for it since then. Tallies count from the hour of the switch (their period);
        rescued jobs from the switch itself: a done run at or after it that followed a failed
        run of the same job. Every asked kind is in the answer."""
        out = {k: SwitchGains(k, s) for k, s in since.items()}
        if not out:
            return out
        counts: dict[str, dict[str, int]] = {k: {} for k in out}
        with self.transaction(readonly=True) as conn:
            items = sorted(since.items())
            for i in range(0, len(items), CHUNK):
                chunk = items[i : i + CHUNK]
                if self._has_console(conn):
                    for kind, what, n in conn.execute(self._tallies_since(chunk)):
                        field = FIELDS.get(Tally(what))
                        if field is not None:
                            counts[kind][field] = counts[kind].get(field, 0) + int(n or 0)
                if self._has_attempts(conn):
                    for kind, n in conn.execute(self._rescued_since(chunk)):
                        counts[kind]["rescued"] = int(n or 0)
        return {k: SwitchGains(k, since[k], **counts[k]) for k in out}

    def _tallies_since(self, chunk: Sequence[tuple[str, datetime | None]]) -> Any:
        t = self.tables.tallies
        cond = or_(
            *(
                t.c.kind == k if s is None else and_(t.c.kind == k, t.c.period_start >= hour_of(s))
                for k, s in chunk
            )
        )
        return (
            select(t.c.kind, t.c.what, func.sum(t.c["count"]))
            .where(cond)
            .group_by(t.c.kind, t.c.what)
        )

    def _rescued_since(self, chunk: Sequence[tuple[str, datetime | None]]) -> Any:
        """Jobs with a done run (since the kind's switch) after a failed run of their own:
        exact, one row per job however many retries it took."""
        done = self.tables.attempts
        failed = done.alias("earlier")
        cond = or_(
            *(
                done.c.kind == k if s is None else and_(done.c.kind == k, done.c.finished_at >= s)
                for k, s in chunk
            )
        )
        earlier = (
            select(failed.c.id)
            .where(
                failed.c.job_id == done.c.job_id,
                failed.c.outcome == AttemptOutcome.FAILED,
                failed.c.started_at < done.c.started_at,
            )
            .exists()
        )
        return (
            select(done.c.kind, func.count(func.distinct(done.c.job_id)))
            .where(cond, done.c.outcome == AttemptOutcome.DONE, earlier)
            .group_by(done.c.kind)
        )
