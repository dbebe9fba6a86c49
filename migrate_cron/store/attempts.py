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

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    String,
    Text,
    insert,
    inspect,
    literal,
    select,
    union_all,
)

from migrate_cron.store.base import StoreBase, aware
from migrate_cron.store.models import Attempt, AttemptRun
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.store.storable import storable
from migrate_cron.vocabulary import AttemptOutcome

#: Characters of output kept per attempt (the end of it: where errors are).
OUTPUT_TAIL = 4000


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
        (``locked_by`` is us, ``state`` in ``states``) and whose run has no row yet.

        One statement for the batch: ``INSERT … SELECT`` from the runs (``_runs_source``)
        joined to their job rows, the fence and the "no row yet" test (``NOT EXISTS`` on
        ``(job_id, started_at)``) in its WHERE. Reading the job rows and the present runs
        first, then inserting, was three statements and a third of the worker's CPU per job
        (``docs/benchmarks.md``, per-job cost budget)."""
        if not runs or not self._has_attempts(conn):
            return 0
        job, att = self.tables.job, self.tables.attempts
        with_ready = self._has_console(conn)
        runs_v = self._runs_source(runs, with_ready).subquery("runs_v")
        columns: list[Any] = [
            runs_v.c.job_id,
            job.c.kind,
            job.c.attempts,
            literal(worker_id, String()),
            runs_v.c.started_at,
            runs_v.c.finished_at,
            literal(str(outcome), String()),
            runs_v.c.exit_code,
            runs_v.c.error,
            runs_v.c.output_tail,
        ]
        names = [*(c.name for c in self._attempt_columns(conn) if c.name != "id")]
        if with_ready:
            columns.append(runs_v.c.ready_at)
        present = (
            select(att.c.id)
            .where(att.c.job_id == runs_v.c.job_id, att.c.started_at == runs_v.c.started_at)
            .exists()
        )
        source = (
            select(*columns)
            .select_from(runs_v.join(job, job.c.id == runs_v.c.job_id))
            .where(job.c.locked_by == worker_id, job.c.state.in_(list(states)), ~present)
        )
        return int(conn.execute(insert(att).from_select(names, source)).rowcount)

    def _runs_source(self, runs: Mapping[int, AttemptRun], with_ready: bool) -> Any:
        """The batch's runs as rows of a SELECT (``UNION ALL`` of one-row SELECTs of bound
        values: every dialect reads it; a VALUES list cannot name its columns on MariaDB or
        SQLite)."""
        rows = []
        for job_id, run in runs.items():
            cells: list[Any] = [
                literal(int(job_id), BigInteger()).label("job_id"),
                literal(run.started_at, UTCDateTime()).label("started_at"),
                literal(run.finished_at, UTCDateTime()).label("finished_at"),
                literal(run.exit_code, Integer()).label("exit_code"),
                literal(storable(run.error), Text()).label("error"),
                literal(storable(run.output[-OUTPUT_TAIL:]) if run.output else None, Text()).label(
                    "output_tail"
                ),
            ]
            if with_ready:
                cells.append(literal(run.ready_at, UTCDateTime()).label("ready_at"))
            rows.append(select(*cells))
        return rows[0] if len(rows) == 1 else union_all(*rows)

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
