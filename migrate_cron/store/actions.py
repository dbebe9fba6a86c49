"""The operators' action log (``job_actions``): who changed the queue, from where, when, what,
and how many rows it changed.

An incident is read afterwards from this log: "who retried the 400 failed exports at 03:12, and
from which machine?". So an acting operation writes its row in the transaction of its change
where it can (the whole change when it fits one chunk, ``admin.py``; a pause, a resume, a run
now): a change and its record commit together or not at all. The time is the database's clock,
like every other time in the queue. A change named by job ids records one row per job (the job
page lists them); a change of a whole kind records one row for the kind (the kind page lists
it).

On a database not yet at schema step 5 nothing is recorded and nothing is read (the log is
empty), and every operation works as before (``console_enabled``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from migrate_cron.store.base import aware
from migrate_cron.store.enqueue import EnqueueOps
from migrate_cron.store.storable import storable
from migrate_cron.vocabulary import Action

#: Newest rows an action list reads (a job's, a kind's).
ACTIONS_LIMIT = 50
#: Characters kept of ``who`` and ``origin`` (their columns' width).
NAME_WIDTH = 255
#: Ids looked up per statement when a change named many jobs.
IDS_PER_READ = 500


@dataclass(frozen=True, slots=True)
class Actor:
    """Who acts and from where: the name a person signed in with and the client's address
    (console), or the OS user and ``cli@HOST`` (CLI)."""

    who: str
    origin: str


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One row of the action log."""

    id: int
    at: datetime
    who: str
    origin: str
    action: str
    kind: str | None
    job_id: int | None
    detail: str | None
    changed: int | None


class ActionOps(EnqueueOps):
    """Record operators' actions and read them back by job and by kind."""

    def record_action(
        self,
        actor: Actor,
        action: Action,
        *,
        kind: str | None = None,
        job_id: int | None = None,
        detail: str | None = None,
        changed: int | None = None,
    ) -> bool:
        """Record one action in a transaction of its own (for a change made elsewhere);
        False when the database has no action log yet."""
        with self.transaction() as conn:
            return self._record(conn, actor, action, [_row(kind, job_id, detail, changed)])

    def actions_for_job(self, job_id: int, limit: int = ACTIONS_LIMIT) -> list[ActionRecord]:
        """The actions recorded on one job, newest first."""
        return self._read_actions(lambda t: t.c.job_id == job_id, limit)

    def actions_for_kind(self, kind: str, limit: int = ACTIONS_LIMIT) -> list[ActionRecord]:
        """The actions recorded on a kind and its jobs, newest first."""
        return self._read_actions(lambda t: t.c.kind == kind, limit)

    def run_now(
        self, kind: str, payload: Any = None, *, max_attempts: int, actor: Actor | None = None
    ) -> int:
        """A new job of ``kind``, due at once, outside its schedule (``jobs run``, the
        console's Run now); recorded in the same transaction. Returns its id."""
        with self.transaction() as conn:
            job_id = int(self.enqueue(kind, payload, max_attempts=max_attempts, conn=conn).job_id)
            if actor is not None:
                self._record(conn, actor, Action.RUN_NOW, [_row(kind, job_id, None, 1)])
        return job_id

    # ------------------------------------------------------------------ for other operations
    def _record(
        self, conn: Connection, actor: Actor, action: Action, rows: Sequence[dict[str, Any]]
    ) -> bool:
        """Insert ``rows`` (kind, job_id, detail, changed) as ``actor``'s ``action``, on the
        database's clock, in the caller's transaction."""
        if not rows or not self._has_console(conn):
            return False
        actions = self.tables.actions
        stmt = insert(actions).values(
            at=self.now_sql(),
            who=actor.who[:NAME_WIDTH] or "-",
            origin=actor.origin[:NAME_WIDTH] or "-",
            action=action,
        )
        conn.execute(stmt, list(rows))
        return True

    def _record_jobs(
        self,
        conn: Connection,
        actor: Actor,
        action: Action,
        ids: Sequence[int],
        changed: Collection[int],
    ) -> None:
        """One row per job named (with its kind, so the kind page shows it too): changed 1 if
        the action changed that job, 0 if it was in another state or gone."""
        if not self._has_console(conn):
            return
        job = self.tables.job
        named = sorted(set(ids))
        kinds: dict[int, str] = {}
        for i in range(0, len(named), IDS_PER_READ):
            part = named[i : i + IDS_PER_READ]
            kinds.update(conn.execute(select(job.c.id, job.c.kind).where(job.c.id.in_(part))).all())
        detail = f"one of {len(named)} jobs named" if len(named) > 1 else None
        rows = [_row(kinds.get(i), i, detail, int(i in changed)) for i in named]
        self._record(conn, actor, action, rows)

    def _read_actions(self, where: Callable[[Any], Any], limit: int) -> list[ActionRecord]:
        if not self.console_enabled():
            return []
        actions = self.tables.actions
        q = (
            select(actions)
            .where(where(actions))
            .order_by(actions.c.at.desc(), actions.c.id.desc())
            .limit(limit)
        )
        with self.transaction(readonly=True) as conn:
            rows = conn.execute(q).all()
        return [ActionRecord(**{**r._mapping, "at": aware(r.at)}) for r in rows]

    def _prune_actions(
        self, age: float, batch: int, on_progress: Callable[[str, int], None] | None
    ) -> int:
        """Delete action rows older than ``age`` seconds, in chunks (``cleanup``)."""
        if not self.console_enabled():
            return 0
        actions = self.tables.actions
        total = 0
        while True:
            with self.transaction() as conn:
                ids = list(
                    conn.execute(
                        select(actions.c.id)
                        .where(actions.c.at < self.after_sql(-age))
                        .order_by(actions.c.at)
                        .limit(batch)
                    ).scalars()
                )
                if ids:
                    total += int(
                        conn.execute(delete(actions).where(actions.c.id.in_(ids))).rowcount
                    )
            if not ids:
                return total
            if on_progress:
                on_progress(actions.name, total)


def _row(
    kind: str | None, job_id: int | None, detail: str | None, changed: int | None
) -> dict[str, Any]:
    return {"kind": kind, "job_id": job_id, "detail": storable(detail), "changed": changed}
