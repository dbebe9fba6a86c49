"""The ``job`` table: enqueue, claim, heartbeat, finish (fenced) and reap.

Every finishing statement is fenced by the attempt it records (``store/fence.py``): it lands
while nobody else has claimed the job since, even after the lease ran out, and changes nothing
once another attempt took the job over or it is finished. Heartbeats renew only a lease that
is still ours (``locked_by = me AND state = 'running'``). The claim itself is the dialect's
hook (``_claim``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    case,
    func,
    select,
    true,
    update,
)

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.base import DEFAULT_MAX_ATTEMPTS, storable
from migrate_cron.store.fence import FenceColumns, not_recorded
from migrate_cron.store.keys import chain_ref
from migrate_cron.store.models import (
    AttemptRun,
    EnqueueResult,
    Job,
    ReapResult,
)
from migrate_cron.vocabulary import AFTER_FAILURE_STATES, AttemptOutcome, JobState

#: The ``leases`` row each concurrency-limited kind's claims lock: ``concurrency:KIND``.
CONCURRENCY_LOCK_PREFIX = "concurrency:"
#: A lock row never expires (it is not a lease; only its row lock matters).
LOCK_ROW_EXPIRES = datetime(2999, 1, 1, tzinfo=UTC)
#: ``leases.name`` holds 200 characters; a kind name may have 200 too.
_LEASE_NAME_MAX = 200


def kind_lock_name(kind: str) -> str:
    """The ``leases`` row a limited kind's claims lock: ``concurrency:KIND``, or a digest of
    the kind when that would not fit the column."""
    name = f"{CONCURRENCY_LOCK_PREFIX}{kind}"
    if len(name) <= _LEASE_NAME_MAX:
        return name
    import hashlib

    return CONCURRENCY_LOCK_PREFIX + "sha256:" + hashlib.sha256(kind.encode()).hexdigest()


class JobOps(AttemptOps):
    """Producer and worker operations on the job table."""

    # ------------------------------------------------------------------ enqueue
    def enqueue(
        self,
        kind: str,
        payload: Any = None,
        *,
        ref: str | None = None,
        run_at: datetime | None = None,
        delay: float | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        scheduled_for: datetime | None = None,
        conn: Connection | None = None,
    ) -> EnqueueResult:
        """Add a job; with ``ref``, a second enqueue of (kind, ref) returns the existing one.

        Pass ``conn`` to enqueue inside your own transaction: the job exists only if your
        transaction commits.
        """
        if conn is not None:
            return self._enqueue(
                conn, kind, payload, ref, run_at, delay, max_attempts, scheduled_for
            )
        with self._translate_errors(), self._producer_connection() as c:
            return self._enqueue(c, kind, payload, ref, run_at, delay, max_attempts, scheduled_for)

    def _enqueue(
        self,
        conn: Connection,
        kind: str,
        payload: Any,
        ref: str | None,
        run_at: datetime | None,
        delay: float | None,
        max_attempts: int,
        scheduled_for: datetime | None,
    ) -> EnqueueResult:
        new_id = self._insert_job(
            conn, kind, payload, ref, run_at, delay, max_attempts, scheduled_for
        )
        if new_id is not None:
            return EnqueueResult(int(new_id), True)
        # (kind, ref) was there: read it in a statement of its own, whose snapshot sees a row
        # that a concurrent producer committed while our insert waited on it.
        job = self.tables.job
        existing = conn.execute(
            select(job.c.id).where(job.c.kind == kind, job.c.ref == ref)
        ).scalar_one()
        return EnqueueResult(int(existing), False)

    def enqueue_many(
        self,
        kind: str,
        payloads: Sequence[Any],
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        chunk: int = 1000,
        conn: Connection | None = None,
    ) -> int:
        """Add one ready job per payload (no dedupe key), ``chunk`` rows per statement; returns
        how many. Each chunk commits on its own (or all in ``conn``); idle workers get one
        wake-up per chunk. For bulk loads and benchmarks."""
        for i in range(0, len(payloads), chunk):
            part = payloads[i : i + chunk]
            if conn is not None:
                self._insert_open_jobs(conn, kind, part, max_attempts)
                continue
            with self._translate_errors(), self._producer_connection() as c:
                self._insert_open_jobs(c, kind, part, max_attempts)
        return len(payloads)

    def enqueue_refs(
        self,
        kind: str,
        items: Sequence[tuple[str, Any, datetime | None]],
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        chunk: int = 1000,
        conn: Connection | None = None,
    ) -> int:
        """Add one job per ``(ref, payload, run_at)`` unless (kind, ref) exists; returns how
        many were new. One multi-row insert-if-absent per ``chunk`` rows, each chunk its own
        transaction (or all in ``conn``); a ref repeated inside ``items`` keeps its first row.
        ``run_at`` None means now."""
        created = 0
        for i in range(0, len(items), chunk):
            with contextlib.nullcontext(conn) if conn is not None else self.transaction() as c:
                # One clock reading per batch, bound as a plain value: the batch then goes as
                # one cached statement with many parameter sets (insertmanyvalues/executemany),
                # not a 1,000-row statement compiled afresh (6x slower, measured).
                now = c.execute(select(self.now_sql())).scalar_one()
                rows: dict[str, dict[str, Any]] = {}
                for ref, payload, run_at in items[i : i + chunk]:
                    rows.setdefault(
                        ref,
                        {
                            "kind": kind,
                            "ref": ref,
                            "payload": payload,
                            "state": JobState.OPEN,
                            "attempts": 0,
                            "max_attempts": max_attempts,
                            "run_at": run_at if run_at is not None else now,
                            "created_at": now,
                        },
                    )
                new = self._insert_many_if_absent(c, self.tables.job, list(rows.values()))
                if new:
                    self._notify(c, kind)
            created += new
        return created

    # ------------------------------------------------------------------ worker side
    def claim(
        self,
        worker_id: str,
        n: int = 1,
        lease: float = 60.0,
        kinds: Sequence[str] | None = None,
        limits: Mapping[str, int] | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """Take up to ``n`` ready jobs: state running, attempts + 1, leased for ``lease`` s.
        ``kinds`` None means any kind; an empty list means none (a worker that can run nothing
        claims nothing). ``limits`` caps how many jobs of a kind run at once over every worker
        (the registry's ``concurrency``): see ``_claim_limited``. ``exclude``: kinds not to
        claim now (paused)."""
        if exclude and kinds is not None:
            kinds = [k for k in kinds if k not in exclude]
            exclude = ()
        if kinds is not None and not kinds:
            return []
        limited = {
            k: v
            for k, v in (limits or {}).items()
            if (kinds is None or k in kinds) and k not in exclude
        }
        if not limited:
            with self.transaction() as conn:
                jobs = self._claim(conn, worker_id, n, lease, kinds, exclude)
            return sorted(jobs, key=lambda j: (j.run_at, j.id))
        jobs = []
        for kind, limit in sorted(limited.items()):  # bounded kinds first: they never starve
            if len(jobs) >= n:
                break
            jobs.extend(self._claim_limited(worker_id, kind, limit, n - len(jobs), lease))
        rest = [k for k in kinds if k not in limited] if kinds is not None else None
        if len(jobs) < n and (rest is None or rest):
            with self.transaction() as conn:
                jobs.extend(
                    self._claim(conn, worker_id, n - len(jobs), lease, rest, [*limited, *exclude])
                )
        return sorted(jobs, key=lambda j: (j.run_at, j.id))

    def _claim_limited(
        self, worker_id: str, kind: str, limit: int, n: int, lease: float
    ) -> list[Job]:
        """Claim jobs of a kind that may run at most ``limit`` at once, race-free.

        One transaction: lock the kind's row in ``leases`` (``concurrency:KIND``; SELECT …
        FOR UPDATE on PostgreSQL and MySQL/MariaDB, the database lock of BEGIN IMMEDIATE on
        SQLite), count the kind's running jobs, claim at most ``limit - running``. A second
        claimer of the kind waits on that row until the first commits, then counts the jobs
        it started (READ COMMITTED reads the latest committed rows). A running job counts
        until it finishes or the reaper takes its expired lease back, so a worker that died
        holding one delays the kind by at most its lease."""
        job, leases = self.tables.job, self.tables.leases
        name = kind_lock_name(kind)
        lock = select(leases.c.name).where(leases.c.name == name).with_for_update()
        for _ in range(2):
            with self.transaction() as conn:
                if conn.execute(lock).first() is not None:
                    running = conn.execute(
                        select(func.count())
                        .select_from(job)
                        .where(job.c.kind == kind, job.c.state == JobState.RUNNING)
                    ).scalar_one()
                    room = min(limit - int(running), n)
                    return self._claim(conn, worker_id, room, lease, [kind]) if room > 0 else []
            # First claim of this kind: create its lock row in a transaction of its own (on
            # MySQL two inserters of one key that then lock it in the same transaction can
            # deadlock), then lock it.
            with self.transaction() as conn:
                self._insert_if_absent(
                    conn,
                    leases,
                    {"name": name, "holder": "concurrency", "expires_at": LOCK_ROW_EXPIRES},
                    ("name",),
                )
        return []

    def _ready_filter(self, kinds: Sequence[str] | None, exclude: Sequence[str] = ()) -> list[Any]:
        job = self.tables.job
        cond: list[Any] = [job.c.state == JobState.OPEN, job.c.run_at <= self.now_sql()]
        if kinds:
            cond.append(job.c.kind.in_(list(kinds)))
        if exclude:
            cond.append(job.c.kind.not_in(list(exclude)))
        return cond

    def _claim_values(self, worker_id: str, lease: float) -> dict[str, Any]:
        job = self.tables.job
        return {
            "state": JobState.RUNNING,
            "attempts": job.c.attempts + 1,
            "locked_by": worker_id,
            "locked_until": self.after_sql(lease),
            "started_at": self.now_sql(),
            "finished_at": None,
        }

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
        job = self.tables.job
        values = {
            "state": JobState.DONE,
            "locked_by": worker_id,
            "finished_at": self.now_sql(),
            "locked_until": None,
            "last_error": None,
        }
        with self.transaction() as conn:
            written = self._fence_columns.update(
                conn, job, worker_id, ids, attempts, self._ids_match, values
            )
            if outputs:
                for job_id, output in outputs.items():
                    conn.execute(
                        update(job)
                        .where(
                            job.c.id == job_id,
                            job.c.locked_by == worker_id,
                            job.c.state == JobState.DONE,
                        )
                        .values(output=storable(output))
                    )
            if runs:
                self._record_attempts(conn, worker_id, AttemptOutcome.DONE, (JobState.DONE,), runs)
            if then:
                self._enqueue_next(conn, worker_id, JobState.DONE, then)
            return int(written)

    def _enqueue_next(
        self,
        conn: Connection,
        worker_id: str,
        state: str,
        then: Mapping[int, Sequence[tuple[str, int]]],
    ) -> None:
        """Enqueue each parent's next jobs — only parents this transaction just finished with
        ``state`` (fenced). The child carries the parent's slot and ``after:PARENT_ID`` as its
        ref, so an outcome written twice enqueues nothing twice."""
        job = self.tables.job
        parents = conn.execute(
            select(job.c.id, job.c.kind, job.c.scheduled_for).where(
                job.c.id.in_(list(then)), job.c.locked_by == worker_id, job.c.state == state
            )
        ).all()
        for parent in parents:
            for kind, max_attempts in then[parent.id]:
                self._enqueue(
                    conn,
                    kind,
                    {"after": parent.kind, "job_id": parent.id, "outcome": state},
                    chain_ref(parent.id),
                    None,
                    None,
                    max_attempts,
                    parent.scheduled_for,
                )

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
        spent: Any = true() if terminal else job.c.attempts >= job.c.max_attempts
        fence = self._fence_columns.attempt_of(worker_id, attempt)
        with self.transaction() as conn:
            res = conn.execute(
                update(job)
                .where(job.c.id == job_id, fence)
                .values(
                    state=case((spent, JobState.FAILED), else_=JobState.OPEN),
                    locked_by=worker_id,
                    run_at=case((spent, job.c.run_at), else_=self.after_sql(retry_in)),
                    finished_at=case((spent, self.now_sql()), else_=None),
                    locked_until=None,
                    last_error=storable(error),
                    output=storable(output),
                )
            )
            if res.rowcount != 1:
                return None
            if run is not None:
                self._record_attempts(
                    conn, worker_id, AttemptOutcome.FAILED, AFTER_FAILURE_STATES, {job_id: run}
                )
            if then:
                self._enqueue_next(conn, worker_id, JobState.FAILED, {job_id: then})
            return str(conn.execute(select(job.c.state).where(job.c.id == job_id)).scalar_one())

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
