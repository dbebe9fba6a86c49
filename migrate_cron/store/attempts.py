"""The ``job_attempts`` history: one row per finished run, written with the run's outcome.

The job row keeps only the last attempt's output; an operator asking "why did it fail on
Tuesday and pass on retry?" needs each run: who ran it, when the run itself started and ended,
how it ended, and the tail of what it printed. Rows are written in the transaction that records
the outcome, for the jobs that transaction just finished (fenced like the outcome), so a run
fenced out — its lease taken over — records nothing. ``(job_id, started_at)`` is unique and
rows already present are skipped, so a batch written again after an outage records each run
once. ``attempt`` is the job's attempt counter when it ran: after an operator's ``retry`` (which
resets the counter) the history reads 1, 2, 3, 1, … in the order the runs started.

A database not yet upgraded to the table (the package was upgraded before ``db upgrade``)
keeps working without history: whether the table exists is asked once per store, and the
worker says so in its log. Runs a worker never reported (it was killed; the reaper reopened
the job) have no row: the job's ``last_error`` says "lease expired".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, inspect, select

from migrate_cron.store.base import StoreBase, aware
from migrate_cron.store.models import Attempt, AttemptRun
from migrate_cron.store.storable import storable
from migrate_cron.vocabulary import AttemptOutcome

#: Characters of output kept per attempt (the end of it: where errors are).
OUTPUT_TAIL = 4000


def run_values(
    run: AttemptRun, with_ready: bool, stamp: Callable[[datetime | None], Any]
) -> list[Any]:
    """One run as the dialects' one-statement histories carry it in a JSON row: started,
    finished, exit code, error, output tail[, ready]. ``stamp``: a time as the dialect's
    statement reads it back (ISO text with its offset, naive UTC text, …)."""
    row: list[Any] = [
        stamp(run.started_at),
        stamp(run.finished_at),
        run.exit_code,
        storable(run.error),
        storable(run.output[-OUTPUT_TAIL:]) if run.output else None,
    ]
    if with_ready:
        row.append(stamp(run.ready_at))
    return row


class AttemptOps(StoreBase):
    def attempts_enabled(self) -> bool:
        """Whether the ``job_attempts`` table exists (asked once per store)."""
        if self._attempts_table is None:
            with self.transaction(readonly=True) as conn:
                return self._has_attempts(conn)
        return self._attempts_table

    def _has_attempts(self, conn: Connection) -> bool:
        """``attempts_enabled`` on a connection already open: a writer asking inside its own
        transaction must not wait for a second connection from a pool it may have drained."""
        if self._attempts_table is None:
            self._attempts_table = bool(inspect(conn).has_table(self.tables.attempts.name))
        return self._attempts_table

    def console_enabled(self) -> bool:
        """Whether schema step 5 is in (``job_workers``, ``job_actions``, ``job_tallies``,
        ``job_attempts.ready_at``); asked once per store, like ``attempts_enabled``: a package
        upgraded before ``db upgrade`` keeps working, without what the step adds."""
        if self._console_table is None:
            with self.transaction(readonly=True) as conn:
                return self._has_console(conn)
        return self._console_table

    def _has_console(self, conn: Connection) -> bool:
        if self._console_table is None:
            self._console_table = bool(inspect(conn).has_table(self.tables.workers.name))
        return self._console_table

    def _attempt_columns(self, conn: Connection) -> list[Any]:
        """The history's columns this database has (``ready_at`` from step 5)."""
        att = self.tables.attempts
        return [c for c in att.c if c.name != "ready_at" or self._has_console(conn)]

    def _record_attempts(
        self,
        conn: Connection,
        worker_id: str,
        outcome: str,
        states: Sequence[str],
        runs: Mapping[int, AttemptRun],
    ) -> int:
        """Insert the history rows of ``runs`` for the jobs this transaction just finished
        (``locked_by`` is us, ``state`` in ``states``) and whose run has no row yet."""
        if not runs or not self._has_attempts(conn):
            return 0
        return self._insert_attempts(conn, worker_id, outcome, states, runs)

    def _insert_attempts(
        self,
        conn: Connection,
        worker_id: str,
        outcome: str,
        states: Sequence[str],
        runs: Mapping[int, AttemptRun],
    ) -> int:
        """The dialect's hook for ``_record_attempts``. Portable: read the job rows the fence
        admits and the runs already present, insert the rest (three statements). PostgreSQL
        does it in one prepared statement (``postgresql_statements.attempts_statement``). A
        ``UNION ALL`` of one SELECT per run made it one statement everywhere, but building
        and cache-keying that construct per batch cost the worker 7 times the client CPU of
        these three statements (docs/benchmarks.md, per-job cost budget)."""
        job, att = self.tables.job, self.tables.attempts
        ids = list(runs)
        rows = conn.execute(
            select(job.c.id, job.c.kind, job.c.attempts).where(
                job.c.id.in_(ids), job.c.locked_by == worker_id, job.c.state.in_(list(states))
            )
        ).all()
        if not rows:
            return 0
        present = {
            (int(r.job_id), aware(r.started_at))
            for r in conn.execute(
                select(att.c.job_id, att.c.started_at).where(att.c.job_id.in_(ids))
            )
        }
        values: list[dict[str, Any]] = []
        for row in rows:
            run = runs[int(row.id)]
            if (int(row.id), run.started_at) in present:
                continue
            values.append(
                {
                    "job_id": int(row.id),
                    "kind": row.kind,
                    "attempt": int(row.attempts),
                    "worker": worker_id,
                    "started_at": run.started_at,
                    "finished_at": run.finished_at,
                    "outcome": outcome,
                    "exit_code": run.exit_code,
                    "error": storable(run.error),
                    "output_tail": storable(run.output[-OUTPUT_TAIL:]) if run.output else None,
                }
            )
            if self._has_console(conn):
                values[-1]["ready_at"] = run.ready_at
        if values:
            conn.execute(insert(att), values)
        return len(values)

    def attempts(self, job_id: int) -> list[Attempt]:
        """A job's recorded runs, in the order they started (empty without the table)."""
        if not self.attempts_enabled():
            return []
        att = self.tables.attempts
        with self.transaction(readonly=True) as conn:
            rows = conn.execute(
                select(*self._attempt_columns(conn))
                .where(att.c.job_id == job_id)
                .order_by(att.c.started_at, att.c.id)
            ).all()
        return [
            Attempt(
                job_id=int(r.job_id),
                kind=r.kind,
                attempt=int(r.attempt),
                worker=r.worker,
                started_at=aware(r.started_at),
                finished_at=aware(r.finished_at),
                outcome=AttemptOutcome(r.outcome),
                exit_code=r.exit_code,
                error=r.error,
                output_tail=r.output_tail,
                ready_at=aware(r.ready_at) if getattr(r, "ready_at", None) else None,
            )
            for r in rows
        ]
