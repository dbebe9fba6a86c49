"""The Store: every named operation on the queue tables, and the only place with SQL.

The shared implementation here is portable SQLAlchemy Core. What differs per dialect family —
"now" on the server's clock, claiming with SKIP LOCKED, insert-if-absent, wake-ups — is a
small set of hooks that ``postgresql.py``, ``mysql.py`` and ``sqlite.py`` override.

Guarantees every implementation keeps (checked by ``tests/contract``):
- A claimed job is owned by exactly one worker (``locked_by``) until its lease ends.
- Finishing (``complete``, ``fail``, ``release``, ``heartbeat``) is fenced on
  ``locked_by = me AND state = 'running'``: a worker whose lease was taken over changes nothing.
- Lease arithmetic uses the database server's clock (SQLite: the local clock, which is the
  database's), never the worker's — unless a test injects a clock.
- Enqueue is insert-if-absent on (kind, ref) and on (job_name, scheduled_for).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    case,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy import exc as sa_exc

from migrate_cron.clock import Clock
from migrate_cron.config import mask_url
from migrate_cron.errors import DatabaseUnavailable, SchemaMissing
from migrate_cron.store.models import (
    CleanupResult,
    EnqueueResult,
    Job,
    KindHistory,
    KindStats,
    QueueStatus,
    ReapResult,
    RunResult,
)
from migrate_cron.store.schema import Tables, UTCDateTime, build_tables

DEFAULT_MAX_ATTEMPTS = 5
_MISSING_TABLE_MARKERS = (
    "no such table",
    "does not exist",
    "doesn't exist",
    "undefinedtable",
    "1146",
)


class Listener:
    """Waits for "new job" wake-ups. The portable one just sleeps (callers poll)."""

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True if woken by a notification."""
        import time

        if timeout > 0:
            time.sleep(timeout)
        return False

    def close(self) -> None:
        return None


class Store:
    """Named operations on the queue. Subclasses implement the dialect hooks."""

    family = "generic"

    def __init__(self, engine: Engine, prefix: str = "", clock: Clock | None = None) -> None:
        self.engine = engine
        self.tables: Tables = build_tables(prefix)
        self.prefix = prefix
        self._clock = clock
        self.url_safe = mask_url(engine.url.render_as_string(hide_password=True))

    # ------------------------------------------------------------------ dialect hooks
    def now_sql(self) -> ColumnElement[datetime]:
        """Current time on the database's clock, as a SQL expression."""
        if self._clock is not None:
            return literal(self._clock.now(), UTCDateTime())
        return self._server_now()

    def after_sql(self, seconds: float) -> ColumnElement[datetime]:
        """``now + seconds`` on the database's clock."""
        if self._clock is not None:
            return literal(self._clock.now() + timedelta(seconds=seconds), UTCDateTime())
        return self._server_after(seconds)

    def _server_now(self) -> ColumnElement[datetime]:
        raise NotImplementedError

    def _server_after(self, seconds: float) -> ColumnElement[datetime]:
        raise NotImplementedError

    def _insert_if_absent(
        self, conn: Connection, table: Any, values: dict[str, Any], keys: Sequence[str]
    ) -> Any | None:
        """Insert a row unless one with the same ``keys`` exists; return its primary key, or
        None when a row with those keys was already there."""
        raise NotImplementedError

    def _claim(
        self, conn: Connection, worker_id: str, n: int, lease: float, kinds: Sequence[str] | None
    ) -> list[Job]:
        raise NotImplementedError

    def _notify(self, conn: Connection, kind: str) -> None:
        """Wake idle workers after the enqueuing transaction commits (PostgreSQL only)."""
        return None

    def listener(self) -> Listener:
        """A wake-up source for idle workers."""
        return Listener()

    # ------------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def transaction(self, readonly: bool = False) -> Iterator[Connection]:
        """A connection in a transaction, with database errors turned into user errors."""
        with self._translate_errors():
            conn = self.engine.connect()
            try:
                if readonly:
                    conn = conn.execution_options(sqlite_readonly=True)
                with conn.begin():
                    yield conn
            finally:
                conn.close()

    @contextlib.contextmanager
    def _translate_errors(self) -> Iterator[None]:
        try:
            yield
        except (sa_exc.OperationalError, sa_exc.ProgrammingError, sa_exc.InterfaceError) as exc:
            raise self.translate(exc) from exc

    def translate(self, exc: Exception) -> Exception:
        """Turn a driver error into DatabaseUnavailable / SchemaMissing with a masked URL."""
        orig = getattr(exc, "orig", exc)
        text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
        lowered = f"{type(orig).__name__} {text}".lower()
        if any(marker in lowered for marker in _MISSING_TABLE_MARKERS) and (
            "table" in lowered or "relation" in lowered
        ):
            return SchemaMissing(
                f"the queue tables are missing in {self.url_safe} ({mask_url(text)}); "
                "run `migrate-cron db upgrade` first"
            )
        if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError) or getattr(
            exc, "connection_invalidated", False
        ):
            return DatabaseUnavailable(f"cannot use the database {self.url_safe}: {mask_url(text)}")
        return exc

    def dispose(self) -> None:
        self.engine.dispose()

    def _job(self, row: Any) -> Job:
        return Job(**row._mapping)

    def _job_columns(self) -> list[Any]:
        return list(self.tables.job.c)

    # ------------------------------------------------------------------ schema
    def create_schema(self) -> None:
        """Create the tables if missing (tests and the demo; users run ``db upgrade``)."""
        with self._translate_errors():
            self.tables.metadata.create_all(self.engine)

    def drop_schema(self) -> None:
        with self._translate_errors():
            self.tables.metadata.drop_all(self.engine)

    def db_now(self) -> datetime:
        with self.transaction(readonly=True) as conn:
            value = conn.execute(select(self.now_sql())).scalar_one()
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value if value.tzinfo else value.replace(tzinfo=UTC)

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
        with self.transaction() as c:
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
        job = self.tables.job
        if run_at is not None:
            start: Any = run_at
        elif delay:
            start = self.after_sql(delay)
        else:
            start = self.now_sql()
        values = {
            "kind": kind,
            "ref": ref,
            "payload": payload,
            "state": "open",
            "attempts": 0,
            "max_attempts": max_attempts,
            "run_at": start,
            "scheduled_for": scheduled_for,
            "created_at": self.now_sql(),
        }
        if ref is None:
            inserted = conn.execute(insert(job).values(**values)).inserted_primary_key
            assert inserted is not None
            new_id = inserted[0]
        else:
            new_id = self._insert_if_absent(conn, job, values, ("kind", "ref"))
            if new_id is None:
                existing = conn.execute(
                    select(job.c.id).where(job.c.kind == kind, job.c.ref == ref)
                ).scalar_one()
                return EnqueueResult(int(existing), False)
        self._notify(conn, kind)
        return EnqueueResult(int(new_id), True)

    def enqueue_many(
        self,
        kind: str,
        payloads: Sequence[Any],
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        chunk: int = 1000,
        conn: Connection | None = None,
    ) -> int:
        """Add one ready job per payload (no dedupe key) with multi-row INSERTs; returns how
        many. For bulk loads and benchmarks; idle workers get one wake-up per chunk."""
        job = self.tables.job
        stmt = insert(job).values(
            kind=kind,
            state="open",
            attempts=0,
            max_attempts=max_attempts,
            run_at=self.now_sql(),
            created_at=self.now_sql(),
        )
        for i in range(0, len(payloads), chunk):
            rows = [{"payload": p} for p in payloads[i : i + chunk]]
            with contextlib.nullcontext(conn) if conn is not None else self.transaction() as c:
                c.execute(stmt, rows)
                self._notify(c, kind)
        return len(payloads)

    def enqueue_run(
        self,
        job_name: str,
        scheduled_for: datetime,
        *,
        payload: Any = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        outcome: str = "enqueued",
        kind: str | None = None,
    ) -> RunResult:
        """Record the slot (job_name, scheduled_for) and, unless skipped, enqueue its job.

        Both rows are written in one transaction; the UNIQUE slot key makes concurrent calls
        from several hosts or schedulers produce one job.
        """
        if outcome not in ("enqueued", "skipped"):
            raise ValueError(f"outcome must be 'enqueued' or 'skipped', not {outcome!r}")
        with self.transaction() as conn:
            return self._enqueue_run(
                conn, job_name, scheduled_for, payload, max_attempts, outcome, kind
            )

    def enqueue_runs(
        self, requests: Sequence[tuple[str, datetime, int]], batch: int = 200
    ) -> list[RunResult]:
        """``enqueue_run`` for many (job_name, scheduled_for, max_attempts) slots, ``batch``
        per transaction; results in request order. Each chunk is written in (job_name, slot)
        order, so concurrent schedulers lock slot keys in the same order and cannot deadlock."""
        results: list[RunResult | None] = [None] * len(requests)
        order = sorted(
            range(len(requests)), key=lambda i: (requests[i][0], requests[i][1].astimezone(UTC))
        )
        for start in range(0, len(order), batch):
            with self.transaction() as conn:
                for i in order[start : start + batch]:
                    name, slot, max_attempts = requests[i]
                    results[i] = self._enqueue_run(
                        conn, name, slot, None, max_attempts, "enqueued", None
                    )
        return [r for r in results if r is not None]

    def _enqueue_run(
        self,
        conn: Connection,
        job_name: str,
        scheduled_for: datetime,
        payload: Any,
        max_attempts: int,
        outcome: str,
        kind: str | None,
    ) -> RunResult:
        runs = self.tables.scheduled_runs
        slot = scheduled_for.astimezone(UTC)
        run_id = self._insert_if_absent(
            conn,
            runs,
            {
                "job_name": job_name,
                "scheduled_for": slot,
                "enqueued_at": self.now_sql(),
                "outcome": outcome,
            },
            ("job_name", "scheduled_for"),
        )
        if run_id is None:
            row = conn.execute(
                select(runs.c.job_id, runs.c.outcome).where(
                    runs.c.job_name == job_name, runs.c.scheduled_for == slot
                )
            ).one()
            return RunResult(False, row.job_id, row.outcome)
        if outcome == "skipped":
            return RunResult(True, None, "skipped")
        result = self._enqueue(
            conn,
            kind or job_name,
            payload,
            slot.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            None,
            None,
            max_attempts,
            slot,
        )
        conn.execute(update(runs).where(runs.c.id == run_id).values(job_id=result.job_id))
        return RunResult(True, result.job_id, "enqueued")

    def last_run(self, job_name: str) -> datetime | None:
        """The newest recorded slot of a job (enqueued or skipped)."""
        runs = self.tables.scheduled_runs
        with self.transaction(readonly=True) as conn:
            return conn.execute(
                select(func.max(runs.c.scheduled_for)).where(runs.c.job_name == job_name)
            ).scalar_one_or_none()

    def last_runs(self, job_names: Sequence[str] | None = None) -> dict[str, datetime]:
        """The newest recorded slot per job (the scheduler loads 10,000 jobs at start and on
        every leadership change). Jobs never recorded are absent. Up to 500 names: one IN
        query; more (or None): one GROUP BY over the (job_name, scheduled_for) unique index."""
        runs = self.tables.scheduled_runs
        q = select(runs.c.job_name, func.max(runs.c.scheduled_for)).group_by(runs.c.job_name)
        names = None if job_names is None else set(job_names)
        if names is not None and len(names) <= 500:
            q = q.where(runs.c.job_name.in_(sorted(names)))
        with self.transaction(readonly=True) as conn:
            rows = conn.execute(q).all()
        return {r[0]: r[1] for r in rows if names is None or r[0] in names}

    def record_skipped(
        self, job_name: str, slots: Sequence[datetime], batch: int = 500
    ) -> list[datetime]:
        """Record slots as ``skipped`` (no job), insert-if-absent; returns the slots newly
        recorded. In transactions of ``batch`` rows: a long outage of a minutely job can mean
        many thousands of rows."""
        runs = self.tables.scheduled_runs
        fresh: list[datetime] = []
        for i in range(0, len(slots), batch):
            with self.transaction() as conn:
                for s in slots[i : i + batch]:
                    slot = s.astimezone(UTC)
                    values = {
                        "job_name": job_name,
                        "scheduled_for": slot,
                        "enqueued_at": self.now_sql(),
                        "outcome": "skipped",
                    }
                    key = ("job_name", "scheduled_for")
                    if self._insert_if_absent(conn, runs, values, key) is not None:
                        fresh.append(slot)
        return fresh

    def runs(self, job_name: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        runs = self.tables.scheduled_runs
        q = select(runs).order_by(runs.c.scheduled_for.desc(), runs.c.id.desc()).limit(limit)
        if job_name is not None:
            q = q.where(runs.c.job_name == job_name)
        with self.transaction(readonly=True) as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    # ------------------------------------------------------------------ worker side
    def claim(
        self,
        worker_id: str,
        n: int = 1,
        lease: float = 60.0,
        kinds: Sequence[str] | None = None,
    ) -> list[Job]:
        """Take up to ``n`` ready jobs: state running, attempts + 1, leased for ``lease`` s."""
        with self.transaction() as conn:
            jobs = self._claim(conn, worker_id, n, lease, kinds)
        return sorted(jobs, key=lambda j: (j.run_at, j.id))

    def _ready_filter(self, kinds: Sequence[str] | None) -> list[Any]:
        job = self.tables.job
        cond: list[Any] = [job.c.state == "open", job.c.run_at <= self.now_sql()]
        if kinds:
            cond.append(job.c.kind.in_(list(kinds)))
        return cond

    def _claim_values(self, worker_id: str, lease: float) -> dict[str, Any]:
        job = self.tables.job
        return {
            "state": "running",
            "attempts": job.c.attempts + 1,
            "locked_by": worker_id,
            "locked_until": self.after_sql(lease),
            "started_at": self.now_sql(),
            "finished_at": None,
        }

    def _fence(self, worker_id: str) -> list[Any]:
        job = self.tables.job
        return [job.c.locked_by == worker_id, job.c.state == "running"]

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
        self, worker_id: str, ids: Sequence[int], outputs: dict[int, str] | None = None
    ) -> int:
        """Mark jobs done (fenced); returns how many were still ours."""
        if not ids:
            return 0
        job = self.tables.job
        with self.transaction() as conn:
            res = conn.execute(
                update(job)
                .where(self._ids_match(ids), *self._fence(worker_id))
                .values(
                    state="done",
                    finished_at=self.now_sql(),
                    locked_until=None,
                    last_error=None,
                )
            )
            if outputs:
                for job_id, output in outputs.items():
                    conn.execute(
                        update(job)
                        .where(
                            job.c.id == job_id, job.c.locked_by == worker_id, job.c.state == "done"
                        )
                        .values(output=output)
                    )
            return int(res.rowcount)

    def fail(
        self,
        worker_id: str,
        job_id: int,
        error: str,
        *,
        retry_in: float = 0.0,
        output: str | None = None,
        terminal: bool = False,
    ) -> str | None:
        """Record a failed attempt: back to ``open`` after ``retry_in`` s, or ``failed`` when
        attempts are spent (or ``terminal``). Returns the new state, None if fenced out."""
        job = self.tables.job
        spent: Any = true() if terminal else job.c.attempts >= job.c.max_attempts
        with self.transaction() as conn:
            res = conn.execute(
                update(job)
                .where(job.c.id == job_id, *self._fence(worker_id))
                .values(
                    state=case((spent, "failed"), else_="open"),
                    run_at=case((spent, job.c.run_at), else_=self.after_sql(retry_in)),
                    finished_at=case((spent, self.now_sql()), else_=None),
                    locked_until=None,
                    last_error=error,
                    output=output,
                )
            )
            if res.rowcount != 1:
                return None
            return str(conn.execute(select(job.c.state).where(job.c.id == job_id)).scalar_one())

    def release(self, worker_id: str, ids: Sequence[int]) -> int:
        """Give claimed jobs back at once, the attempt not counted (graceful shutdown)."""
        if not ids:
            return 0
        job = self.tables.job
        with self.transaction() as conn:
            res = conn.execute(
                update(job)
                .where(self._ids_match(ids), *self._fence(worker_id))
                .values(
                    state="open",
                    attempts=case((job.c.attempts > 0, job.c.attempts - 1), else_=0),
                    run_at=self.now_sql(),
                    locked_by=None,
                    locked_until=None,
                    started_at=None,
                )
            )
            return int(res.rowcount)

    def reap(self, error: str = "lease expired: the worker stopped heartbeating") -> ReapResult:
        """Return jobs whose lease expired to ``open``, or ``failed`` if out of attempts."""
        job = self.tables.job
        expired = and_(job.c.state == "running", job.c.locked_until < self.now_sql())
        with self.transaction() as conn:
            failed = conn.execute(
                update(job)
                .where(expired, job.c.attempts >= job.c.max_attempts)
                .values(
                    state="failed",
                    finished_at=self.now_sql(),
                    locked_until=None,
                    last_error=error,
                )
            ).rowcount
            reopened = conn.execute(
                update(job)
                .where(expired, job.c.attempts < job.c.max_attempts)
                .values(
                    state="open",
                    run_at=self.now_sql(),
                    locked_by=None,
                    locked_until=None,
                    last_error=error,
                )
            ).rowcount
        return ReapResult(int(reopened), int(failed))

    # ------------------------------------------------------------------ operator side
    def get(self, job_id: int) -> Job | None:
        job = self.tables.job
        with self.transaction(readonly=True) as conn:
            row = conn.execute(select(job).where(job.c.id == job_id)).first()
        return self._job(row) if row is not None else None

    def list_jobs(
        self,
        state: str | None = None,
        kind: str | None = None,
        limit: int = 50,
    ) -> list[Job]:
        job = self.tables.job
        q = select(job).order_by(job.c.id.desc()).limit(limit)
        if state:
            q = q.where(job.c.state == state)
        if kind:
            q = q.where(job.c.kind == kind)
        with self.transaction(readonly=True) as conn:
            return [self._job(r) for r in conn.execute(q)]

    def retry(
        self,
        ids: Sequence[int] | None = None,
        *,
        kind: str | None = None,
        all_failed: bool = False,
        states: Sequence[str] = ("failed", "cancelled"),
        batch: int = 1000,
    ) -> int:
        """Put failed (or cancelled) jobs back to ``open`` now, attempts reset. In chunks."""
        job = self.tables.job
        cond: list[Any] = [job.c.state.in_(list(states))]
        if ids is not None:
            cond.append(job.c.id.in_(list(ids)))
        elif kind is not None:
            cond.append(job.c.kind == kind)
        elif not all_failed:
            return 0
        return self._chunked_update(
            cond,
            {
                "state": "open",
                "attempts": 0,
                "run_at": self.now_sql(),
                "locked_by": None,
                "locked_until": None,
                "finished_at": None,
            },
            batch,
        )

    def cancel(self, ids: Sequence[int], batch: int = 1000) -> int:
        """Cancel jobs that have not finished; a worker never runs an open cancelled job and
        the fenced finish of a running one changes nothing."""
        job = self.tables.job
        cond = [job.c.id.in_(list(ids)), job.c.state.in_(["open", "running", "failed"])]
        return self._chunked_update(
            cond,
            {"state": "cancelled", "finished_at": self.now_sql(), "locked_until": None},
            batch,
        )

    def _chunked_update(self, cond: list[Any], values: dict[str, Any], batch: int) -> int:
        job = self.tables.job
        total = 0
        last_id = 0
        while True:
            with self.transaction() as conn:
                chunk = list(
                    conn.execute(
                        select(job.c.id)
                        .where(*cond, job.c.id > last_id)
                        .order_by(job.c.id)
                        .limit(batch)
                    ).scalars()
                )
                if not chunk:
                    return total
                last_id = chunk[-1]
                total += int(
                    conn.execute(
                        update(job).where(job.c.id.in_(chunk), *cond).values(**values)
                    ).rowcount
                )

    def cleanup(
        self,
        done_older_than: float | None = 7 * 86400,
        failed_older_than: float | None = 90 * 86400,
        batch: int = 1000,
        on_progress: Callable[[str, int], None] | None = None,
    ) -> CleanupResult:
        """Delete finished jobs in short chunks; keep the newest scheduled_runs row per job."""
        counts: dict[str, int] = {}
        for state, age in (
            ("done", done_older_than),
            ("failed", failed_older_than),
            ("cancelled", failed_older_than),
        ):
            counts[state] = (
                0 if age is None else self._delete_finished(state, age, batch, on_progress)
            )
        runs = (
            0 if done_older_than is None else self._delete_runs(done_older_than, batch, on_progress)
        )
        return CleanupResult(counts["done"], counts["failed"], counts["cancelled"], runs)

    def _delete_finished(
        self, state: str, age: float, batch: int, on_progress: Callable[[str, int], None] | None
    ) -> int:
        job = self.tables.job
        total = 0
        while True:
            with self.transaction() as conn:
                ids = list(
                    conn.execute(
                        select(job.c.id)
                        .where(job.c.state == state, job.c.finished_at < self.after_sql(-age))
                        .order_by(job.c.state, job.c.finished_at)
                        .limit(batch)
                    ).scalars()
                )
                if not ids:
                    return total
                total += int(
                    conn.execute(
                        delete(job).where(job.c.id.in_(ids), job.c.state == state)
                    ).rowcount
                )
            if on_progress:
                on_progress(state, total)

    def _delete_runs(
        self, age: float, batch: int, on_progress: Callable[[str, int], None] | None
    ) -> int:
        """Old slot rows, job by job, in chunks on the slot key (job_name, scheduled_for).

        The newest slot per job is read once, up front, and never deleted: the missed-run
        policies (run-once, backfill) start from it. Slots recorded after that read are newer
        and therefore kept too.
        """
        runs = self.tables.scheduled_runs
        with self.transaction(readonly=True) as conn:
            newest = conn.execute(
                select(runs.c.job_name, func.max(runs.c.scheduled_for)).group_by(runs.c.job_name)
            ).all()
        total = 0
        for name, keep in newest:
            while True:
                with self.transaction() as conn:
                    ids = list(
                        conn.execute(
                            select(runs.c.id)
                            .where(
                                runs.c.job_name == name,
                                runs.c.scheduled_for < keep,
                                runs.c.enqueued_at < self.after_sql(-age),
                            )
                            .order_by(runs.c.scheduled_for)
                            .limit(batch)
                        ).scalars()
                    )
                    if not ids:
                        break
                    total += int(conn.execute(delete(runs).where(runs.c.id.in_(ids))).rowcount)
                if on_progress:
                    on_progress("scheduled_runs", total)
        return total

    def stats(self) -> list[KindStats]:
        """Counts per kind and state, and the age of the oldest ready job per kind.

        Done jobs are counted too; on very large tables use the windowed status queries.
        """
        job = self.tables.job
        now = self.db_now()
        ready = and_(job.c.state == "open", job.c.run_at <= now)
        q = (
            select(
                job.c.kind,
                func.sum(case((ready, 1), else_=0)).label("ready"),
                func.sum(case((and_(job.c.state == "open", job.c.run_at > now), 1), else_=0)).label(
                    "scheduled"
                ),
                func.sum(case((job.c.state == "running", 1), else_=0)).label("running"),
                func.sum(case((job.c.state == "done", 1), else_=0)).label("done"),
                func.sum(case((job.c.state == "failed", 1), else_=0)).label("failed"),
                func.sum(case((job.c.state == "cancelled", 1), else_=0)).label("cancelled"),
                func.min(case((ready, job.c.run_at), else_=None)).label("oldest"),
            )
            .group_by(job.c.kind)
            .order_by(job.c.kind)
        )
        out = []
        with self.transaction(readonly=True) as conn:
            for r in conn.execute(q):
                oldest = r.oldest
                if isinstance(oldest, str):
                    oldest = datetime.fromisoformat(oldest)
                if oldest is not None and oldest.tzinfo is None:
                    oldest = oldest.replace(tzinfo=UTC)
                out.append(
                    KindStats(
                        kind=r.kind,
                        ready=int(r.ready or 0),
                        scheduled=int(r.scheduled or 0),
                        running=int(r.running or 0),
                        done=int(r.done or 0),
                        failed=int(r.failed or 0),
                        cancelled=int(r.cancelled or 0),
                        oldest_ready_age=(now - oldest).total_seconds() if oldest else None,
                    )
                )
        return out

    def status(
        self, since: datetime, now: datetime | None = None, *, slots: bool = True
    ) -> QueueStatus:
        """Per-kind counts, oldest ready job, run-time percentiles of jobs done since ``since``,
        last success/failure, and the newest slot of each scheduled job (``slots``).

        Index-bounded: cost follows the live rows, the window and the number of kinds, not
        the number of done rows (see ``store/status.py``). ``now`` defaults to the database
        clock (or the injected one).
        """
        from migrate_cron.store.status import StatusQueries

        return StatusQueries(self).run(since, now or self.db_now(), slots=slots)

    def count_jobs(
        self,
        ids: Sequence[int] | None = None,
        *,
        kind: str | None = None,
        states: Sequence[str] | None = None,
    ) -> int:
        """How many jobs match (for "retry 12 jobs?" prompts before a bulk change)."""
        job = self.tables.job
        q = select(func.count()).select_from(job)
        if ids is not None:
            q = q.where(job.c.id.in_(list(ids)))
        if kind is not None:
            q = q.where(job.c.kind == kind)
        if states is not None:
            q = q.where(job.c.state.in_(list(states)))
        with self.transaction(readonly=True) as conn:
            return int(conn.execute(q).scalar_one())

    def kind_history(
        self, kinds: Sequence[str], since: datetime | None = None
    ) -> dict[str, KindHistory]:
        """Per kind, the rows created at or after ``since``: counts per state, retried jobs,
        the newest success and the newest error on record. Every asked kind is in the result
        (all zero when it has no rows). Used by ``verify`` and ``migrations``."""
        job = self.tables.job
        out: dict[str, KindHistory] = {k: KindHistory(k) for k in kinds}
        if not out:
            return out
        names = list(out)
        with self.transaction(readonly=True) as conn:
            for i in range(0, len(names), 500):
                cond: list[Any] = [job.c.kind.in_(names[i : i + 500])]
                if since is not None:
                    cond.append(job.c.created_at >= since.astimezone(UTC))
                q = (
                    select(
                        job.c.kind,
                        job.c.state,
                        func.count().label("n"),
                        func.sum(case((job.c.attempts > 1, 1), else_=0)).label("retried"),
                        func.max(job.c.finished_at).label("last"),
                    )
                    .where(*cond)
                    .group_by(job.c.kind, job.c.state)
                )
                for r in conn.execute(q):
                    h = out[r.kind]
                    changes: dict[str, Any] = {
                        r.state: getattr(h, r.state) + int(r.n),
                        "retried": h.retried + int(r.retried or 0),
                    }
                    if r.state == "done" and r.last is not None:
                        changes["last_success"] = _aware(r.last)
                    out[r.kind] = replace(h, **changes)
            for kind, h in out.items():
                if not (h.open or h.running or h.failed or h.cancelled):
                    continue
                cond = [job.c.kind == kind, job.c.last_error.is_not(None)]
                if since is not None:
                    cond.append(job.c.created_at >= since.astimezone(UTC))
                row = conn.execute(
                    select(job.c.id, job.c.last_error)
                    .where(*cond)
                    .order_by(job.c.id.desc())
                    .limit(1)
                ).first()
                if row is not None:
                    out[kind] = replace(h, last_error=row.last_error, last_error_job=row.id)
        return out

    # ------------------------------------------------------------------ leases
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


def _aware(value: Any) -> datetime:
    """A timestamp read back from the database as an aware UTC datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)
