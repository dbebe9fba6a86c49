"""The ``job`` table: enqueue (``enqueue.py``), claim (``claim.py``), heartbeat, output so
far, finish (fenced) and reap.

Every finishing statement is fenced by the attempt it records (``store/fence.py``): it lands
while nobody else has claimed the job since, even after the lease ran out, and changes nothing
once another attempt took the job over or it is finished. Heartbeats renew only a lease that
is still ours (``locked_by = me AND state = 'running'``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Connection,
    Text,
    and_,
    bindparam,
    case,
    or_,
    select,
    update,
)

from migrate_cron.store.claim import ClaimOps
from migrate_cron.store.enqueue import EnqueueOps
from migrate_cron.store.fence import FenceColumns, not_recorded
from migrate_cron.store.models import AttemptRun, Failure, ReapResult
from migrate_cron.store.storable import storable
from migrate_cron.vocabulary import AFTER_FAILURE_STATES, AttemptOutcome, JobState


class JobOps(EnqueueOps, ClaimOps):
    """Producer and worker operations on the job table."""

    @property
    def _fence_columns(self) -> FenceColumns:
        job = self.tables.job
        return FenceColumns(
            attempts=job.c.attempts,
            locked_by=job.c.locked_by,
            locked_until=job.c.locked_until,
            running=job.c.state == JobState.RUNNING,
            taken_back=job.c.state.in_(AFTER_FAILURE_STATES),
        )

    def _fence(self, worker_id: str) -> list[Any]:
        """The lease is still ours: what heartbeats renew and ``owned_jobs`` reports."""
        return [self._fence_columns.held_by(worker_id)]

    def _ids_match(self, ids: Sequence[int]) -> ColumnElement[bool]:
        """``id IN (…)`` for the worker's batch writes (heartbeat, complete, release).
        PostgreSQL overrides it with ``id = ANY(:array)``: one parameter instead of one per id
        (half the client CPU per completed job) and one statement text for every batch size."""
        return self.tables.job.c.id.in_(list(ids))

    def heartbeat(self, worker_id: str, ids: Sequence[int], lease: float) -> int:
        """Extend the lease of jobs this worker still owns; returns how many it owns."""
        if not ids:
            return 0
        job = self.tables.job
        with self.transaction() as conn:
            res = conn.execute(
                update(job)
                .where(self._ids_match(ids), *self._fence(worker_id))
                .values(locked_until=self.after_sql(lease))
            )
            return int(res.rowcount)

    def owned_jobs(self, worker_id: str, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` this worker still holds (running under its lease). The worker asks
        when a heartbeat extended fewer leases than it sent, to stop the runs it lost."""
        if not ids:
            return []
        job = self.tables.job
        with self.transaction(readonly=True) as conn:
            return [
                int(i)
                for i in conn.execute(
                    select(job.c.id).where(self._ids_match(ids), *self._fence(worker_id))
                ).scalars()
            ]

    def write_output(self, worker_id: str, outputs: Mapping[int, str]) -> int:
        """Store the output so far of running jobs (job id → the tail the worker keeps), so
        an operator sees a long run's progress before it ends; the finish overwrites it.
        Fenced like a heartbeat: only a job this worker still holds and still running, so a
        late write never lands on a job another worker (or the reaper) took over. Returns
        how many rows were written."""
        if not outputs:
            return 0
        with self.transaction() as conn:
            return self._write_outputs(conn, outputs, self._fence(worker_id))

    def _write_outputs(
        self, conn: Connection, outputs: Mapping[int, str], fence: Sequence[Any]
    ) -> int:
        """One UPDATE for every job's output (``CASE id WHEN … THEN …``), on the rows of
        ``outputs`` that ``fence`` admits; one UPDATE per job was N statements per batch."""
        job = self.tables.job
        texts = {int(i): storable(o) for i, o in outputs.items()}
        value = case(texts, value=job.c.id) if len(texts) > 1 else next(iter(texts.values()))
        return int(
            conn.execute(
                update(job).where(self._ids_match(list(texts)), *fence).values(output=value)
            ).rowcount
        )

    def complete(
        self,
        worker_id: str,
        ids: Sequence[int],
        outputs: dict[int, str] | None = None,
        then: Mapping[int, Sequence[tuple[str, int]]] | None = None,
        runs: Mapping[int, AttemptRun] | None = None,
        attempts: Mapping[int, int] | None = None,
    ) -> int:
        """Mark jobs done (fenced by ``attempts``: per job, the attempt that ran; see
        ``store/fence.py``); returns how many were written. ``then``: per job, the
        (kind, max_attempts) to enqueue in the same transaction (a chain's next step).
        ``runs``: per job, the run for the attempts history, recorded in the same transaction."""
        if not ids:
            return 0
        if runs and attempts is not None and not outputs and not then and self._clock is None:
            one = self._complete_in_one(worker_id, ids, runs, attempts)
            if one is not None:
                return one
        job = self.tables.job
        values = {
            "state": JobState.DONE,
            "locked_by": worker_id,
            "finished_at": self.now_sql(),
            "locked_until": None,
            "last_error": None,
        }
        with self.transaction() as conn:
            if self._clock is None and attempts is not None:
                written = self._fence_columns.update_prepared(
                    conn, ids, worker_id, attempts, self._done_statement(),
                    self.reusable_now_params(),
                )  # fmt: skip
            else:
                written = self._fence_columns.update(
                    conn, job, worker_id, ids, attempts, self._ids_match, values
                )
            if outputs and written:
                done_by_me = [job.c.locked_by == worker_id, job.c.state == JobState.DONE]
                self._write_outputs(conn, outputs, done_by_me)
            if runs:
                self._record_attempts(conn, worker_id, AttemptOutcome.DONE, (JobState.DONE,), runs)
            if then:
                self._enqueue_next(conn, worker_id, JobState.DONE, then)
            return int(written)

    def _complete_in_one(
        self,
        worker_id: str,
        ids: Sequence[int],
        runs: Mapping[int, AttemptRun],
        attempts: Mapping[int, int],
    ) -> int | None:
        """A dialect's way to write a batch of successes with their history in one statement
        (PostgreSQL's ``done_statement``); None: not here, take the transaction."""
        return None

    def _done_statement(self) -> Callable[[bool], Any]:
        """``complete``'s fenced UPDATE, built once per store (``fence.fenced_update``); its
        time is ``reusable_now`` (SQLite once wrote the first batch's time on every job)."""
        if self._done_update is None:
            values = {
                "state": JobState.DONE,
                "locked_by": bindparam("f_worker"),
                "finished_at": self.reusable_now(),
                "locked_until": None,
                "last_error": None,
            }
            self._done_update = self._fence_columns.fenced_update(
                self.tables.job, self._ids_param(), values
            )
        statement: Callable[[bool], Any] = self._done_update
        return statement

    def _ids_param(self) -> ColumnElement[bool]:
        """``_ids_match`` with the ids as the parameter ``f_ids``, for a statement built once."""
        return self.tables.job.c.id.in_(bindparam("f_ids", expanding=True))

    def fail(
        self,
        worker_id: str,
        job_id: int,
        error: str,
        *,
        retry_in: float = 0.0,
        output: str | None = None,
        terminal: bool = False,
        then: Sequence[tuple[str, int]] = (),
        run: AttemptRun | None = None,
        attempt: int | None = None,
    ) -> str | None:
        """Record failed attempt ``attempt`` (the fence: ``store/fence.py``): back to ``open``
        after ``retry_in`` s, or ``failed`` when attempts are spent (or ``terminal``). Returns
        the new state, None if fenced out. ``then``: (kind, max_attempts) enqueued in the same
        transaction if it is ``failed``."""
        job = self.tables.job
        with self.transaction() as conn:
            failure = Failure(job_id, attempt, error, retry_in, output, terminal, run)
            if not self._fail_one(conn, worker_id, failure):
                return None
            if run is not None:
                self._record_attempts(
                    conn, worker_id, AttemptOutcome.FAILED, AFTER_FAILURE_STATES, {job_id: run}
                )
            if then:
                self._enqueue_next(conn, worker_id, JobState.FAILED, {job_id: then})
            return str(conn.execute(select(job.c.state).where(job.c.id == job_id)).scalar_one())

    def fail_many(self, worker_id: str, failures: Sequence[Failure]) -> dict[int, str | None]:
        """``fail`` for each of ``failures`` (none with a ``then``): job id → its new state,
        None if fenced out. Where the dialect can (``_fail_in_one``), the batch and its history
        are one statement; else one transaction: an UPDATE per job, then the history and the
        new states of the written ones, one statement each — where each job was a transaction
        of three statements."""
        states: dict[int, str | None] = {f.job_id: None for f in failures}
        if len(failures) > 1 and self._clock is None:
            one = self._fail_in_one(worker_id, failures)
            if one is not None:
                return one
        job = self.tables.job
        with self.transaction() as conn:
            written = [f for f in failures if self._fail_one(conn, worker_id, f)]
            if not written:
                return states
            runs = {f.job_id: f.run for f in written if f.run is not None}
            if runs:
                self._record_attempts(
                    conn, worker_id, AttemptOutcome.FAILED, AFTER_FAILURE_STATES, runs
                )
            ids = [f.job_id for f in written]
            for job_id, state in conn.execute(
                select(job.c.id, job.c.state).where(self._ids_match(ids))
            ):
                states[int(job_id)] = str(state)
        return states

    def _fail_one(self, conn: Connection, worker_id: str, failure: Failure) -> bool:
        """``fail``'s fenced UPDATE of one job; True if it was written. The statement is built
        once per store (``_fail_statement``): built per call, it cost as much client CPU as
        its round trip to MariaDB (~0.7 ms)."""
        params = {
            "f_id": failure.job_id,
            "f_worker": worker_id,
            "f_terminal": failure.terminal,
            "f_error": storable(failure.error),
            "f_output": storable(failure.output),
            **self.reusable_after_params(failure.retry_in),
            **self.reusable_now_params(),
        }
        if failure.attempt is not None:
            params["f_attempt"] = failure.attempt
        res = conn.execute(self._fail_statement()(failure.attempt is not None), params)
        return bool(res.rowcount == 1)

    def _fail_statement(self) -> Callable[[bool], Any]:
        """``fail``'s UPDATE with every value a parameter: back to ``open`` at ``f_after``, or
        ``failed`` when ``f_terminal`` or the attempts are spent (``fence.fenced_update``)."""
        if self._fail_update is None:
            job = self.tables.job
            spent = or_(
                bindparam("f_terminal", type_=Boolean()), job.c.attempts >= job.c.max_attempts
            )
            values = {
                "state": case((spent, JobState.FAILED), else_=JobState.OPEN),
                "locked_by": bindparam("f_worker"),
                "run_at": case((spent, job.c.run_at), else_=self.reusable_after()),
                "finished_at": case((spent, self.reusable_now()), else_=None),
                "locked_until": None,
                "last_error": bindparam("f_error", type_=Text()),
                "output": bindparam("f_output", type_=Text()),
            }
            self._fail_update = self._fence_columns.fenced_update(
                job, job.c.id == bindparam("f_id"), values
            )
        statement: Callable[[bool], Any] = self._fail_update
        return statement

    def _fail_in_one(
        self, worker_id: str, failures: Sequence[Failure]
    ) -> dict[int, str | None] | None:
        """A dialect's way to write a batch of failures with their history in one statement
        (PostgreSQL's ``fail_statement``); None: not here, the batch's transaction."""
        return None

    def release(
        self, worker_id: str, ids: Sequence[int], attempts: Mapping[int, int] | None = None
    ) -> int:
        """Give claimed jobs back at once, the attempt not counted (graceful shutdown); fenced
        like ``complete``: a job the reaper took back meanwhile gets its attempt back too."""
        if not ids:
            return 0
        job = self.tables.job
        values = {
            "state": JobState.OPEN,
            "attempts": case((job.c.attempts > 0, job.c.attempts - 1), else_=0),
            "run_at": self.now_sql(),
            "locked_by": None,
            "locked_until": None,
            "started_at": None,
        }
        with self.transaction() as conn:
            return self._fence_columns.update(
                conn, job, worker_id, ids, attempts, self._ids_match, values
            )

    def fenced_out(self, worker_id: str, attempts: Mapping[int, int]) -> dict[int, str]:
        """Why the outcomes of these attempts (job id → attempt) are not recorded: for each
        job whose row does not hold this worker's outcome of that attempt, a reason (taken
        over by another attempt, already finished, cancelled, …). For the worker's log."""
        if not attempts:
            return {}
        job = self.tables.job
        with self.transaction(readonly=True) as conn:
            rows = {
                int(r.id): (str(r.state), int(r.attempts), r.locked_by)
                for r in conn.execute(
                    select(job.c.id, job.c.state, job.c.attempts, job.c.locked_by).where(
                        self._ids_match(list(attempts))
                    )
                )
            }
        return not_recorded(rows, worker_id, attempts)

    def reap(self, error: str = "lease expired: the worker stopped heartbeating") -> ReapResult:
        """Return jobs whose lease expired to ``open``, or ``failed`` if out of attempts; either
        way nobody holds them (``locked_by`` empty), so the worker of that attempt can still
        record its outcome until another claim (``store/fence.py``)."""
        job = self.tables.job
        expired = and_(job.c.state == JobState.RUNNING, job.c.locked_until < self.now_sql())
        with self.transaction() as conn:
            failed = conn.execute(
                update(job)
                .where(expired, job.c.attempts >= job.c.max_attempts)
                .values(
                    state=JobState.FAILED,
                    finished_at=self.now_sql(),
                    locked_by=None,
                    locked_until=None,
                    last_error=error,
                )
            ).rowcount
            reopened = conn.execute(
                update(job)
                .where(expired, job.c.attempts < job.c.max_attempts)
                .values(
                    state=JobState.OPEN,
                    run_at=self.now_sql(),
                    locked_by=None,
                    locked_until=None,
                    last_error=error,
                )
            ).rowcount
        return ReapResult(int(reopened), int(failed))
