"""PostgreSQL's Store: one-statement claim (CTE with FOR UPDATE SKIP LOCKED, then UPDATE …
RETURNING), ON CONFLICT DO NOTHING, and enqueues that send their LISTEN/NOTIFY wake-up in the
same statement. Its statements are in ``postgresql_statements.py``, the enqueue's run on the
driver's cursor in ``postgresql_driver.py``, the listening connection in
``postgresql_listener.py``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    BindParameter,
    ColumnElement,
    Connection,
    Float,
    any_,
    bindparam,
    cast,
    func,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert

from migrate_cron.store.base import Listener
from migrate_cron.store.dialects.postgresql_claim import ClaimingStore
from migrate_cron.store.dialects.postgresql_driver import (
    OWN_AUTOCOMMIT,
    DriverStatement,
    driver_may_run,
)
from migrate_cron.store.dialects.postgresql_listener import PostgresListener
from migrate_cron.store.dialects.postgresql_statements import (
    attempt_row,
    attempts_statement,
    batch_rows,
    enqueue_many_statement,
    enqueue_statement,
    insert_rows_statement,
    recorded_slots_statement,
    slot_jobs_statement,
    slot_rows_statement,
)
from migrate_cron.store.keys import slot_ref, wake_channel
from migrate_cron.store.models import AttemptRun, JobState
from migrate_cron.store.rows import RowClaim
from migrate_cron.store.schema import UTCDateTime


class PostgresStore(ClaimingStore):
    family = "postgresql"
    supports_listen = True
    supports_percentile_cont = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The enqueue statements, built on first use (they depend on the table prefix).
        self._enqueue_stmt: Any = None
        self._enqueue_many_stmt: Any = None
        #: ``_enqueue_stmt`` compiled for the driver's cursor, on the first ``enqueue``
        #: without ``conn=``.
        self._enqueue_driver: DriverStatement | None = None
        #: The job id column's sequence, looked up on the first scheduler chunk.
        self._job_id_sequence: str | None = None
        #: Statements built on first use (``_statement``).
        self._statements: dict[str, Any] = {}

    @property
    def channel(self) -> str:
        return wake_channel(self.prefix)

    def _server_now(self) -> ColumnElement[datetime]:
        return func.now(type_=UTCDateTime())

    def _server_after(self, seconds: float) -> ColumnElement[datetime]:
        return (func.now() + literal(timedelta(seconds=seconds))).cast(UTCDateTime())

    def _server_after_param(self, micros: BindParameter[int]) -> ColumnElement[datetime]:
        seconds = cast(micros, Float()) / 1_000_000
        return (func.now() + func.make_interval(0, 0, 0, 0, 0, 0, seconds)).cast(UTCDateTime())

    def _server_hour(self) -> ColumnElement[datetime]:
        """Whole hours since the epoch: ``date_trunc`` would cut in the session's time zone."""
        epoch = func.floor(func.extract("epoch", func.now()) / 3600) * 3600
        return func.to_timestamp(epoch, type_=UTCDateTime())

    def _conflict_insert(self, table: Any) -> Any:
        return pg_insert(table)

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[Any]:
        return cast(func.extract("epoch", end - start), Float)

    def duration_ticks(self, start: Any, end: Any) -> tuple[ColumnElement[Any], int]:
        # extract() answers an exact numeric: whole microseconds.
        return cast(func.extract("epoch", end - start) * 1_000_000, BigInteger), 1_000_000

    def epoch_seconds(self, column: Any) -> ColumnElement[Any]:
        # extract() answers a fraction; floor it before the cast (which would round).
        return cast(func.floor(func.extract("epoch", column)), BigInteger)

    def _insert_if_absent(
        self, conn: Connection, table: Any, values: dict[str, Any], keys: Sequence[str]
    ) -> Any | None:
        pk = next(iter(table.primary_key.columns))
        stmt = (
            pg_insert(table).values(**values).on_conflict_do_nothing(index_elements=list(keys))
        ).returning(pk)
        return conn.execute(stmt).scalar_one_or_none()

    def _insert_many_if_absent(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]]
    ) -> int:
        """One statement for the batch (``insert_rows_statement``)."""
        if not rows:
            return 0
        return len(conn.execute(insert_rows_statement(table, rows)).all())

    @contextlib.contextmanager
    def _producer_connection(self) -> Iterator[Connection]:
        """Autocommit: ``_insert_job`` and ``_insert_open_jobs`` are one statement each (insert
        and NOTIFY together), so the statement is its own transaction and a call costs one
        round trip, as PgQueuer's enqueue does, instead of BEGIN + statement + COMMIT. The
        NOTIFY is still delivered only when that statement commits. The connection is marked
        as the store's own (``OWN_AUTOCOMMIT``): only on such a connection may ``_insert_job``
        run its statement on the driver's cursor, never in a caller's transaction. With an
        injected clock (tests) the portable two-statement path runs, in a transaction."""
        if self._clock is not None:
            with self.transaction() as conn:
                yield conn
            return
        conn = self.engine.connect().execution_options(
            isolation_level="AUTOCOMMIT", **{OWN_AUTOCOMMIT: True}
        )
        try:
            yield conn
        finally:
            conn.close()

    def _insert_job(
        self,
        conn: Connection,
        kind: str,
        payload: Any,
        ref: str | None,
        run_at: datetime | None,
        delay: float | None,
        max_attempts: int,
        scheduled_for: datetime | None,
    ) -> Any | None:
        """One statement: ``WITH ins AS (INSERT … ON CONFLICT (kind, ref) DO NOTHING RETURNING
        id, kind) SELECT id, pg_notify(channel, kind) FROM ins`` — the wake-up is sent only
        for a row that was inserted (a NULL ref never conflicts). The statement is built once
        per store with bound parameters only: SQLAlchemy finds it in its compiled cache and
        psycopg prepares it server-side after a few calls (half the client CPU per call, next
        to building an INSERT with its values each time).

        On the store's own autocommit connection (``enqueue`` without ``conn=``) the statement,
        compiled once, runs on psycopg's cursor of that pooled connection (``DriverStatement``):
        SQLAlchemy's execute path around one cached statement was a third of an enqueue's
        client CPU (290 -> 200 us per call, medians of interleaved runs, one job per call).
        The rows, the errors and the connection's invalidation are SQLAlchemy's
        (``tests/store/test_postgresql.py`` compares both). A caller's ``conn`` (its
        transaction) keeps SQLAlchemy's path."""
        if self._clock is not None:
            return super()._insert_job(
                conn, kind, payload, ref, run_at, delay, max_attempts, scheduled_for
            )
        if self._enqueue_stmt is None:
            self._enqueue_stmt = enqueue_statement(self.tables)
        params = {
            "e_kind": kind,
            "e_ref": ref,
            "e_payload": json.dumps(payload),
            "e_state": JobState.OPEN.value,
            "e_max_attempts": max_attempts,
            "e_run_at": run_at,
            "e_delay": timedelta(seconds=delay or 0.0),
            "e_scheduled_for": scheduled_for,
            "e_channel": self.channel,
        }
        if driver_may_run(conn):
            if self._enqueue_driver is None:
                self._enqueue_driver = DriverStatement(self._enqueue_stmt, conn.dialect)
            row = self._enqueue_driver.execute(conn, params)
            return None if row is None else row[0]
        return conn.execute(self._enqueue_stmt, params).scalar_one_or_none()

    def _insert_open_jobs(
        self, conn: Connection, kind: str, payloads: Sequence[Any], max_attempts: int
    ) -> None:
        """One statement per batch: the payloads as one ``text[]`` parameter, ``unnest``ed and
        cast to jsonb, the other columns the same for every row, and the batch's NOTIFY in the
        same statement. A multi-row VALUES list (or executemany) sends and parses a parameter
        set per row; the array is one short statement text, prepared once (PgQueuer inserts
        its batches the same way)."""
        if self._clock is not None:
            super()._insert_open_jobs(conn, kind, payloads, max_attempts)
            return
        if self._enqueue_many_stmt is None:
            self._enqueue_many_stmt = enqueue_many_statement(self.tables)
        params = {
            "m_kind": kind,
            "m_payloads": [json.dumps(p) for p in payloads],
            "m_state": JobState.OPEN.value,
            "m_max_attempts": max_attempts,
            "m_channel": self.channel,
        }
        conn.execute(self._enqueue_many_stmt, params)

    def _claim_rows(self, conn: Connection, request: RowClaim, n: int) -> list[tuple[Any, int]]:
        """As ``_claim``: one statement, the ready rows picked with SKIP LOCKED in a CTE."""
        picked = (
            select(request.key)
            .where(*request.ready)
            .order_by(*request.order)
            .limit(n)
            .with_for_update(skip_locked=True)
            .cte("picked")
        )
        stmt = (
            update(request.table)
            .where(request.key == picked.c[0])
            .values(dict(request.values))
            .returning(request.key, request.attempts)
        )
        return [(r[0], int(r[1])) for r in conn.execute(stmt).all()]

    def _insert_attempts(
        self,
        conn: Connection,
        worker_id: str,
        outcome: str,
        states: Sequence[str],
        runs: Mapping[int, AttemptRun],
    ) -> int:
        """One statement, prepared once (``attempts_statement``): the runs travel as one JSON
        parameter. Three statements (read the jobs, read the runs present, insert) were a
        third of the worker's client CPU per job."""
        ready = self._has_console(conn)
        stmt = self._statement(f"attempts {ready}", lambda: attempts_statement(self.tables, ready))
        rows = [[int(job_id), *attempt_row(run, ready)] for job_id, run in runs.items()]
        params = {
            **batch_rows(rows),
            "a_worker": worker_id,
            "a_outcome": str(outcome),
            "a_states": [str(s) for s in states],
        }
        return int(conn.execute(stmt, params).rowcount)

    def _ids_match(self, ids: Sequence[int]) -> ColumnElement[bool]:
        return self.tables.job.c.id == any_(literal([int(i) for i in ids], ARRAY(BigInteger)))

    def _ids_param(self) -> ColumnElement[bool]:
        return self.tables.job.c.id == any_(bindparam("f_ids", type_=ARRAY(BigInteger)))

    def _notify(self, conn: Connection, kind: str) -> None:
        conn.execute(
            text("SELECT pg_notify(:channel, :kind)"), {"channel": self.channel, "kind": kind}
        )

    def _recorded_slots(self, conn: Connection, keys: Sequence[tuple[str, datetime]]) -> Any:
        """Exactly the chunk's keys, from one JSON batch (``batch``)."""
        return conn.execute(
            self._statement(
                "recorded slots",
                lambda: recorded_slots_statement(self.tables, self._slot_results()),
            ),
            batch_rows([(name, at.isoformat()) for name, at in keys]),
        )

    def _write_slots(
        self,
        conn: Connection,
        slots: Sequence[tuple[str, datetime, str]],
        jobs: Sequence[tuple[str, datetime, int]],
    ) -> list[int]:
        """Three statements, none of them per slot: the jobs' ids are drawn from the job
        table's sequence first, so each slot row is inserted already pointing at its job; then
        the jobs with those ids, and the wake-up of each of their kinds in the same statement.
        The portable UPDATE that links rows afterwards writes a new version of every slot row
        (in every index of the table): it was a third of a chunk's time. Slot rows are still
        written before jobs (``enqueue_run``'s lock order)."""
        ids = self._draw_job_ids(conn, len(jobs)) if jobs else []
        job_of = {(name, at): i for (name, at, _), i in zip(jobs, ids, strict=True)}
        iso = {at: at.isoformat() for _, at, _ in slots}
        if slots:
            conn.execute(
                self._statement(
                    "slot rows", lambda: slot_rows_statement(self.tables, self.now_sql())
                ),
                batch_rows(
                    [
                        (name, iso[at], outcome, job_of.get((name, at)))
                        for name, at, outcome in slots
                    ]
                ),
            )
        if jobs:
            rows = [
                (i, name, slot_ref(at), iso[at], max_attempts)
                for (name, at, max_attempts), i in zip(jobs, ids, strict=True)
            ]
            conn.execute(
                self._statement(
                    "slot jobs", lambda: slot_jobs_statement(self.tables, self.now_sql())
                ),
                {**batch_rows(rows), "channel": self.channel},
            )
        return ids

    def _draw_job_ids(self, conn: Connection, count: int) -> list[int]:
        """``count`` new job ids from the id column's own sequence (what an insert would have
        taken; a rolled-back chunk leaves a gap, as a rolled-back insert does)."""
        drawn = conn.execute(
            text("SELECT nextval(CAST(:seq AS regclass)) FROM generate_series(1, :count)"),
            {"seq": self._job_id_sequence_of(conn), "count": count},
        )
        return [int(i) for i in drawn.scalars()]

    def _job_id_sequence_of(self, conn: Connection) -> str:
        """The sequence behind the job table's id: ``bigserial`` as the migrations create it
        (no insert could work without it), looked up once per store."""
        if self._job_id_sequence is None:
            table = conn.dialect.identifier_preparer.format_table(self.tables.job)
            self._job_id_sequence = conn.execute(
                select(func.pg_get_serial_sequence(table, "id"))
            ).scalar_one()
        return self._job_id_sequence

    def listener(self) -> Listener:
        return PostgresListener(self.engine, self.channel, self.url_safe)
