"""Claiming rows straight from a business table the registry describes (``[tables.NAME]``).

The first article's pattern: an application's ``notifications`` table with a status column,
polled by one cron script, becomes a table that many workers claim batches from. The table
stays the application's; claiming adds four columns (``CLAIM_COLUMNS``, written by
``generate migration --claim-table``) and moves the status column between the registry's
ready / processing / done / failed values. Every other column and row is left alone.

The guarantees are the job table's (``jobs.py``), on the same named operations, so the worker
loop runs unchanged (``worker/source.py``; the added columns and indexes are ``rows.py``'s):

- a claimed row is owned by one worker (``locked_by``) until ``locked_until``; the claim is the
  dialect's hook (``_claim_rows``: SKIP LOCKED on PostgreSQL and MySQL/MariaDB, BEGIN
  IMMEDIATE on SQLite), so concurrent workers never pick the same ready row;
- heartbeats renew only a lease still ours (``locked_by = me AND status = processing``);
  finishing and release are fenced by the attempt (``store/fence.py``, the job table's
  condition): a row the reaper took back lands its outcome until another worker claims it;
- a failed attempt goes back to ready with ``locked_until`` = now + backoff — the claim takes
  only ready rows whose ``locked_until`` is empty or past, so the lease column doubles as the
  next-attempt time and the revision adds no fifth column — or to failed when out of attempts;
- the reaper returns rows whose lease expired (their worker died) to ready, or failed.

The reaper needs no shared lease here: the app's database may not hold migrate-cron's tables,
and the reaping UPDATE only touches expired rows, so two workers reaping at once is harmless.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    Text,
    and_,
    case,
    column,
    inspect,
    literal,
    null,
    or_,
    select,
    table,
    true,
    update,
)

from migrate_cron.errors import ConfigError, SchemaMissing
from migrate_cron.store.fence import FenceColumns, not_recorded
from migrate_cron.store.models import AttemptRun, Failure, Job, ReapResult
from migrate_cron.store.row_queue_quiet import RowQueueQuiet
from migrate_cron.store.rows import CLAIM_COLUMNS, RowClaim
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.store.storable import storable
from migrate_cron.vocabulary import JobState

if TYPE_CHECKING:
    from migrate_cron.registry import StatusValue, TableSpec
    from migrate_cron.store.store import Store

REAP_ERROR = "lease expired: the worker stopped heartbeating"


class RowQueue(RowQueueQuiet):
    """The named operations of ``worker/source.py`` on a business table."""

    supports_listen = False

    def __init__(self, store: Store, spec: TableSpec) -> None:
        self.store = store
        self.spec = spec
        self.url_safe = store.url_safe
        own = dict.fromkeys([spec.key, spec.status, *([spec.order_by] if spec.order_by else [])])
        self.table = table(
            spec.table,
            *(column(name) for name in own),
            column("locked_by", String()),
            column("locked_until", UTCDateTime()),
            column("attempts", Integer()),
            column("last_error", Text()),
        )
        c = self.table.c
        self._key = c[spec.key]
        self._status = c[spec.status]
        order = [c[spec.order_by]] if spec.order_by and spec.order_by != spec.key else []
        self._order = (*order, self._key)

    # ------------------------------------------------------------------ start-up
    def check(self) -> None:
        """Fail before the first claim: the table exists, has the registry's columns, and has
        the claim columns (else say which command adds them)."""
        spec = self.spec
        with self.store._translate_errors():
            found = inspect(self.store.engine)
            if not found.has_table(spec.table):
                raise SchemaMissing(
                    f"[tables.{spec.name}]: no table {spec.table!r} in {self.url_safe}"
                )
            names = {col["name"] for col in found.get_columns(spec.table)}
        for key in ("key", "status", "order_by"):
            name = getattr(spec, key)
            if name is not None and name not in names:
                raise ConfigError(
                    f"[tables.{spec.name}]: key {key!r}: table {spec.table!r} has no column "
                    f"{name!r} (it has {', '.join(sorted(names))})"
                )
        missing = [name for name in CLAIM_COLUMNS if name not in names]
        if missing:
            raise SchemaMissing(
                f"table {spec.table!r} lacks the claim columns {', '.join(missing)}: run "
                f"`migrate-cron generate migration --claim-table {spec.name}`, then "
                "`alembic upgrade head`"
            )

    # ------------------------------------------------------------------ what the loop asks
    # ------------------------------------------------------------------ claiming
    def _value(self, value: StatusValue) -> ColumnElement[Any]:
        """A status value rendered into the statement: PostgreSQL then matches the partial
        index's predicate whatever plan it caches."""
        return literal(value, literal_execute=True)

    def _is(self, value: StatusValue) -> ColumnElement[bool]:
        return self._status == self._value(value)

    @property
    def _fence_columns(self) -> FenceColumns:
        c, spec = self.table.c, self.spec
        return FenceColumns(
            attempts=c.attempts,
            locked_by=c.locked_by,
            locked_until=c.locked_until,
            running=self._is(spec.processing),
            taken_back=or_(self._is(spec.ready), self._is(spec.failed)),
        )

    def _fence(self, worker_id: str) -> list[ColumnElement[bool]]:
        return [self._fence_columns.held_by(worker_id)]

    def _keys(self, ids: Sequence[int]) -> ColumnElement[bool]:
        return self._key.in_(list(ids))

    def claim(
        self,
        worker_id: str,
        n: int = 1,
        lease: float = 60.0,
        kinds: Sequence[str] | None = None,
        limits: Mapping[str, int] | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """Take up to ``n`` ready rows: status processing, attempts + 1, leased for ``lease``
        s. Kinds, limits and pauses are the job table's ideas; a table is one kind."""
        c = self.table.c
        store = self.store
        request = RowClaim(
            table=self.table,
            key=self._key,
            attempts=c.attempts,
            ready=(
                self._is(self.spec.ready),
                or_(c.locked_until.is_(None), c.locked_until <= store.now_sql()),
            ),
            order=self._order,
            values={
                self.spec.status: self._value(self.spec.processing),
                "attempts": c.attempts + 1,
                "locked_by": worker_id,
                "locked_until": store.after_sql(lease),
            },
        )
        with store.transaction() as conn:
            rows = store._claim_rows(conn, request, n)
        now = datetime.now(UTC)
        return [self._job(key, attempts, worker_id, now) for key, attempts in rows]

    def _job(self, key: Any, attempts: int, worker_id: str, now: datetime) -> Job:
        """A claimed row as the loop's ``Job``: ``id`` and ``payload`` are the row's key (a
        handler gets it as its argument), ``kind`` the registry section's name."""
        return Job(
            id=key,
            kind=self.spec.name,
            ref=None,
            payload=key,
            state=JobState.RUNNING,
            attempts=int(attempts),
            max_attempts=self.spec.run.max_attempts,
            run_at=now,
            scheduled_for=None,
            locked_by=worker_id,
            locked_until=None,
            last_error=None,
            output=None,
            created_at=now,
            started_at=now,
            finished_at=None,
        )

    # ------------------------------------------------------------------ worker side
    def heartbeat(self, worker_id: str, ids: Sequence[int], lease: float) -> int:
        """Extend the leases this worker still owns; returns how many it owns."""
        if not ids:
            return 0
        with self.store.transaction() as conn:
            res = conn.execute(
                update(self.table)
                .where(self._keys(ids), *self._fence(worker_id))
                .values(locked_until=self.store.after_sql(lease))
            )
            return int(res.rowcount)

    def owned_jobs(self, worker_id: str, ids: Sequence[int]) -> list[int]:
        if not ids:
            return []
        with self.store.transaction(readonly=True) as conn:
            return list(
                conn.execute(
                    select(self._key).where(self._keys(ids), *self._fence(worker_id))
                ).scalars()
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
        """Mark rows done (fenced by ``attempts``); ``locked_by`` is the record of who
        processed it. Outputs, chains and run history are the job table's: a business row has
        no place for them."""
        if not ids:
            return 0
        values = {
            self.spec.status: self._value(self.spec.done),
            "locked_by": worker_id,
            "locked_until": None,
            "last_error": None,
        }
        with self.store.transaction() as conn:
            return self._fence_columns.update(
                conn, self.table, worker_id, ids, attempts, self._keys, values
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
        """Failed attempt ``attempt``: back to ready, claimable after ``retry_in`` s, or failed
        when attempts are spent (or ``terminal``). Returns "open"/"failed", None if fenced
        out."""
        c = self.table.c
        spec = self.spec
        spent: Any = true() if terminal else c.attempts >= spec.run.max_attempts
        status = case((spent, self._value(spec.failed)), else_=self._value(spec.ready))
        with self.store.transaction() as conn:
            res = conn.execute(
                update(self.table)
                .where(self._key == job_id, self._fence_columns.attempt_of(worker_id, attempt))
                .values(
                    {
                        spec.status: status,
                        "locked_by": None,
                        "locked_until": case((spent, null()), else_=self.store.after_sql(retry_in)),
                        "last_error": storable(error),
                    }
                )
            )
            if res.rowcount != 1:
                return None
            now = conn.execute(select(self._status).where(self._key == job_id)).scalar_one()
        return JobState.FAILED if _same(now, spec.failed) else JobState.OPEN

    def fail_many(self, worker_id: str, failures: Sequence[Failure]) -> dict[int, str | None]:
        """``fail`` for each row, one transaction each (a business table has no history to
        write with it)."""
        return {
            f.job_id: self.fail(
                worker_id,
                f.job_id,
                f.error,
                retry_in=f.retry_in,
                output=f.output,
                terminal=f.terminal,
                run=f.run,
                attempt=f.attempt,
            )
            for f in failures
        }

    def release(
        self, worker_id: str, ids: Sequence[int], attempts: Mapping[int, int] | None = None
    ) -> int:
        """Give claimed rows back at once, the attempt not counted (graceful shutdown)."""
        if not ids:
            return 0
        c = self.table.c
        values = {
            self.spec.status: self._value(self.spec.ready),
            "attempts": case((c.attempts > 0, c.attempts - 1), else_=0),
            "locked_by": None,
            "locked_until": None,
        }
        with self.store.transaction() as conn:
            return self._fence_columns.update(
                conn, self.table, worker_id, ids, attempts, self._keys, values
            )

    def fenced_out(self, worker_id: str, attempts: Mapping[int, int]) -> dict[int, str]:
        """Why these attempts' outcomes are not recorded (see ``jobs.py``)."""
        if not attempts:
            return {}
        c = self.table.c
        with self.store.transaction(readonly=True) as conn:
            rows = {
                r[0]: (self._state_of(r[1]), int(r[2]), r[3])
                for r in conn.execute(
                    select(self._key, self._status, c.attempts, c.locked_by).where(
                        self._keys(list(attempts))
                    )
                )
            }
        return not_recorded(rows, worker_id, attempts)

    def _state_of(self, read: Any) -> str:
        """A status read back, in the job table's words."""
        spec = self.spec
        for value, state in (
            (spec.ready, JobState.OPEN),
            (spec.processing, JobState.RUNNING),
            (spec.done, JobState.DONE),
            (spec.failed, JobState.FAILED),
        ):
            if _same(read, value):
                return state
        return str(read)

    def reap(self, error: str = REAP_ERROR) -> ReapResult:
        """Return rows whose lease expired to ready, or failed if out of attempts; nobody
        holds them then, so the attempt's worker can still record its outcome."""
        c = self.table.c
        spec = self.spec
        expired = and_(self._is(spec.processing), c.locked_until < self.store.now_sql())
        with self.store.transaction() as conn:
            failed = conn.execute(
                update(self.table)
                .where(expired, c.attempts >= spec.run.max_attempts)
                .values(
                    {
                        spec.status: self._value(spec.failed),
                        "locked_by": None,
                        "locked_until": None,
                        "last_error": error,
                    }
                )
            ).rowcount
            reopened = conn.execute(
                update(self.table)
                .where(expired, c.attempts < spec.run.max_attempts)
                .values(
                    {
                        spec.status: self._value(spec.ready),
                        "locked_by": None,
                        "locked_until": None,
                        "last_error": error,
                    }
                )
            ).rowcount
        return ReapResult(int(reopened), int(failed))


def _same(read: Any, value: StatusValue) -> bool:
    """A status read back equals a registry value (MySQL may return an integer code as text
    for a VARCHAR column and vice versa)."""
    return str(read) == str(value)
