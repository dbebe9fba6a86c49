"""PostgreSQL: one-statement claim (CTE with FOR UPDATE SKIP LOCKED, then UPDATE … RETURNING),
ON CONFLICT DO NOTHING, and LISTEN/NOTIFY wake-ups delivered after the enqueue commits."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Float,
    Integer,
    Interval,
    Text,
    any_,
    bindparam,
    cast,
    func,
    insert,
    literal,
    literal_column,
    select,
    text,
    true,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.selectable import Subquery
from sqlalchemy.types import TypeEngine

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.store.base import Listener
from migrate_cron.store.faults import first_line, read_only_server
from migrate_cron.store.keys import slot_ref, wake_channel
from migrate_cron.store.models import Job, JobState
from migrate_cron.store.rows import RowClaim
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.store.store import Store


class PostgresListener(Listener):
    """A dedicated autocommit connection that LISTENs; notifications arrive after commit."""

    def __init__(self, store: PostgresStore) -> None:
        raw = store.engine.raw_connection()
        # Take the driver connection before detaching: a detached fairy no longer exposes it.
        conn = raw.driver_connection
        assert conn is not None
        self._conn: Any = conn
        try:  # LISTEN while checked out: under the deadline of every use (``deadline.py``)
            self._conn.autocommit = True
            self._conn.execute(f'LISTEN "{store.channel}"')
        except Exception as exc:
            raw.invalidate()  # never back to the pool in autocommit
            if read_only_server(exc):  # a replica ("cannot execute LISTEN during recovery")
                raise DatabaseUnavailable(
                    f"cannot use the database {store.url_safe}: {first_line(exc)}"
                ) from exc
            raise
        raw.detach()  # never goes back to the pool with LISTEN active
        self._raw = raw

    def wait(self, timeout: float) -> bool:
        woken = False
        # notifies() holds the connection lock until the generator ends: finish it before
        # draining (a nested call from inside the loop deadlocks).
        for _ in self._conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
            woken = True
        if woken:  # drain anything else already queued so one burst is one wake-up
            for _ in self._conn.notifies(timeout=0, stop_after=1000):
                pass
        return woken

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()


class PostgresStore(Store):
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

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[Any]:
        return cast(func.extract("epoch", end - start), Float)

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
        """The batch as three arrays (ref, payload, run_at) through ``unnest``: one short
        statement with a handful of parameters. The same 1,000 rows as a VALUES list spent most
        of their time in the driver parsing a long query text afresh each batch (3x slower).
        Every other column is the same for all rows of a batch (``enqueue_refs`` builds them)."""
        import json

        if not rows:
            return 0
        first = rows[0]
        source = (
            func.unnest(
                bindparam("refs", [r["ref"] for r in rows], type_=ARRAY(Text)),
                bindparam("payloads", [_json(json, r["payload"]) for r in rows], ARRAY(Text)),
                bindparam("run_ats", [r["run_at"] for r in rows], ARRAY(UTCDateTime())),
            )
            .table_valued("ref", "payload", "run_at")
            .render_derived(name="r")
        )
        columns = ("kind", "ref", "payload", "state", "attempts", "max_attempts", "run_at",
                   "created_at")  # fmt: skip
        picked = select(
            literal(first["kind"], table.c.kind.type),
            source.c.ref,
            cast(source.c.payload, JSONB),
            literal(str(first["state"])),
            literal(first["attempts"]),
            literal(first["max_attempts"]),
            source.c.run_at,
            literal(first["created_at"], UTCDateTime()),
        ).select_from(source)
        stmt = (
            pg_insert(table)
            .from_select(list(columns), picked)
            .on_conflict_do_nothing()
            .returning(table.c.id)
        )
        return len(conn.execute(stmt).all())

    @contextlib.contextmanager
    def _producer_connection(self) -> Iterator[Connection]:
        """Autocommit: ``_insert_job`` and ``_insert_open_jobs`` are one statement each (insert
        and NOTIFY together), so the statement is its own transaction and a call costs one
        round trip, as PgQueuer's enqueue does, instead of BEGIN + statement + COMMIT. The
        NOTIFY is still delivered only when that statement commits. The connection is marked
        as the store's own (``_OWN_AUTOCOMMIT``): only on such a connection may ``_insert_job``
        run its statement on the driver's cursor, never in a caller's transaction. With an
        injected clock (tests) the portable two-statement path runs, in a transaction."""
        if self._clock is not None:
            with self.transaction() as conn:
                yield conn
            return
        conn = self.engine.connect().execution_options(
            isolation_level="AUTOCOMMIT", **{_OWN_AUTOCOMMIT: True}
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
        import json

        if self._enqueue_stmt is None:
            self._enqueue_stmt = self._build_enqueue_stmt()
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
        if _driver_may_run(conn):
            if self._enqueue_driver is None:
                self._enqueue_driver = DriverStatement(self._enqueue_stmt, conn.dialect)
            row = self._enqueue_driver.execute(conn, params)
            return None if row is None else row[0]
        return conn.execute(self._enqueue_stmt, params).scalar_one_or_none()

    def _build_enqueue_stmt(self) -> Any:
        job = self.tables.job
        now = func.now(type_=UTCDateTime())
        start = func.coalesce(
            bindparam("e_run_at", type_=UTCDateTime()),
            (now + bindparam("e_delay", type_=Interval())).cast(UTCDateTime()),
            type_=UTCDateTime(),
        )
        inserted = (
            pg_insert(job)
            .values(
                kind=bindparam("e_kind", type_=Text()),
                ref=bindparam("e_ref", type_=Text()),
                payload=cast(bindparam("e_payload", type_=Text()), JSONB),
                state=bindparam("e_state", type_=Text()),
                attempts=0,
                max_attempts=bindparam("e_max_attempts", type_=Integer()),
                run_at=start,
                scheduled_for=bindparam("e_scheduled_for", type_=UTCDateTime()),
                created_at=now,
            )
            .on_conflict_do_nothing(index_elements=["kind", "ref"])
            .returning(job.c.id, job.c.kind)
            .cte("ins")
        )
        return select(
            inserted.c.id, func.pg_notify(bindparam("e_channel", type_=Text()), inserted.c.kind)
        ).select_from(inserted)

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
        import json

        if self._enqueue_many_stmt is None:
            self._enqueue_many_stmt = self._build_enqueue_many_stmt()
        params = {
            "m_kind": kind,
            "m_payloads": [json.dumps(p) for p in payloads],
            "m_state": JobState.OPEN.value,
            "m_max_attempts": max_attempts,
            "m_channel": self.channel,
        }
        conn.execute(self._enqueue_many_stmt, params)

    def _build_enqueue_many_stmt(self) -> Any:
        job = self.tables.job
        now = func.now(type_=UTCDateTime())
        source = (
            func.unnest(bindparam("m_payloads", type_=ARRAY(Text)))
            .table_valued("payload")
            .render_derived(name="p")
        )
        picked = select(
            bindparam("m_kind", type_=Text()),
            cast(source.c.payload, JSONB),
            bindparam("m_state", type_=Text()),
            literal(0),
            bindparam("m_max_attempts", type_=Integer()),
            now,
            now,
        ).select_from(source)
        columns = ["kind", "payload", "state", "attempts", "max_attempts", "run_at", "created_at"]
        inserted = pg_insert(job).from_select(columns, picked).cte("ins")
        # The insert is not referenced by the SELECT: add_cte() makes SQLAlchemy render it
        # (PostgreSQL runs a data-modifying CTE whether or not it is read).
        notify = func.pg_notify(bindparam("m_channel", type_=Text()), bindparam("m_kind"))
        return select(notify).add_cte(inserted)

    def _claim(
        self,
        conn: Connection,
        worker_id: str,
        n: int,
        lease: float,
        kinds: Sequence[str] | None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        job = self.tables.job
        picked = (
            select(job.c.id)
            .where(*self._ready_filter(kinds, exclude))
            .order_by(job.c.run_at, job.c.id)
            .limit(n)
            .with_for_update(skip_locked=True)
            .cte("picked")
        )
        stmt = (
            update(job)
            .where(job.c.id == picked.c.id)
            .values(**self._claim_values(worker_id, lease))
            .returning(*job.c)
        )
        return [self._job(r) for r in conn.execute(stmt).all()]  # one fetch, not one per row

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

    def _ids_match(self, ids: Sequence[int]) -> ColumnElement[bool]:
        return self.tables.job.c.id == any_(literal([int(i) for i in ids], ARRAY(BigInteger)))

    def _notify(self, conn: Connection, kind: str) -> None:
        conn.execute(
            text("SELECT pg_notify(:channel, :kind)"), {"channel": self.channel, "kind": kind}
        )

    def _recorded_slots(self, conn: Connection, keys: Sequence[tuple[str, datetime]]) -> Any:
        """Exactly the chunk's keys, from one JSON batch (``_batch``)."""
        return conn.execute(
            self._statement("recorded slots", self._build_recorded_slots),
            _batch_rows([(name, at.isoformat()) for name, at in keys]),
        )

    def _build_recorded_slots(self) -> Any:
        """Each key looked up in the slot key's index — a fixed statement, prepared once,
        instead of two IN lists of ~200 parameters each, which SQLAlchemy expands into a new
        statement text per chunk. The lookup is a LATERAL subquery with ``OFFSET 0``, which
        keeps the planner from flattening it into a join: on a table whose statistics lag its
        growth (a scheduler's first hours) it chose a hash join over a scan of the whole
        table, 6 ms for 8 keys among 29,000 rows instead of 0.2 ms."""
        runs = self.tables.scheduled_runs
        given = _batch(name=Text(), slot=UTCDateTime())
        found = (
            self._slot_results()
            .where(runs.c.job_name == given.c.name, runs.c.scheduled_for == given.c.slot)
            .offset(0)
            .lateral("found")
        )
        return select(found).select_from(given).join(found, true())

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
                self._statement("slot rows", self._build_slot_rows),
                _batch_rows(
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
                self._statement("slot jobs", self._build_slot_jobs),
                {**_batch_rows(rows), "channel": self.channel},
            )
        return ids

    def _build_slot_rows(self) -> Any:
        given = _batch(name=Text(), slot=UTCDateTime(), outcome=Text(), job=BigInteger())
        return insert(self.tables.scheduled_runs).from_select(
            ["job_name", "scheduled_for", "enqueued_at", "outcome", "job_id"],
            select(given.c.name, given.c.slot, self.now_sql(), given.c.outcome, given.c.job),
        )

    def _build_slot_jobs(self) -> Any:
        """The jobs with their drawn ids, and ``pg_notify`` once per kind inserted; ``now()``
        is the transaction's start, the same instant as the slot rows' ``enqueued_at``."""
        job = self.tables.job
        given = _batch(
            id=BigInteger(), kind=Text(), ref=Text(), slot=UTCDateTime(), attempts=Integer()
        )
        now = self.now_sql()
        inserted = (
            insert(job)
            .from_select(
                [
                    "id",
                    "kind",
                    "ref",
                    "payload",
                    "state",
                    "attempts",
                    "max_attempts",
                    "run_at",
                    "scheduled_for",
                    "created_at",
                ],
                select(
                    given.c.id,
                    given.c.kind,
                    given.c.ref,
                    cast(literal("null"), JSONB),  # as the portable insert stores None
                    literal(JobState.OPEN.value),
                    literal(0),
                    given.c.attempts,
                    now,
                    given.c.slot,
                    now,
                ),
            )
            .returning(job.c.kind)
            .cte("inserted")
        )
        kinds = select(inserted.c.kind).distinct().subquery("kinds")
        wake = func.pg_notify(bindparam("channel", type_=Text()), kinds.c.kind)
        return select(func.count(wake)).select_from(kinds)

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

    def _statement(self, name: str, build: Callable[[], Any]) -> Any:
        """A statement built once per store (it depends only on the table prefix): building a
        construct with a JSON batch and a LATERAL subquery for each chunk was a fifth of a
        scheduler tick. With an injected clock (tests) its time is baked in: built each time."""
        if self._clock is not None:
            return build()
        made = self._statements.get(name)
        if made is None:
            made = self._statements[name] = build()
        return made

    def listener(self) -> Listener:
        return PostgresListener(self)


#: The execution option ``_producer_connection`` sets on the autocommit connection it opened.
_OWN_AUTOCOMMIT = "migrate_cron_own_autocommit"


def _driver_may_run(conn: Connection) -> bool:
    """Whether ``conn`` is the store's own autocommit connection and nothing would miss a
    statement run past SQLAlchemy: no event listener (``before_cursor_execute``,
    ``handle_error``: tracing, tests capturing statements), no SQL echo, no schema translation.
    Otherwise SQLAlchemy's execute path runs, as before."""
    options = conn.get_execution_options()
    # SQLAlchemy's own flags (private names, stable through 2.0 and 2.1); a version without
    # one of them reads as "has events", which keeps SQLAlchemy's path.
    flags = (conn, conn.engine, conn.dialect)
    return bool(
        options.get(_OWN_AUTOCOMMIT)
        and "schema_translate_map" not in options
        and not any(getattr(owner, "_has_events", True) for owner in flags)
        and not getattr(conn, "_echo", True)
    )


class DriverStatement:
    """A Core statement compiled once for psycopg, run on the cursor of a pooled connection.

    What SQLAlchemy's execute path adds per call to a statement it already has in its compiled
    cache (cache lookup, execution context, result object) cost as much client CPU as the
    driver's own work. This keeps what matters of that path: the compiled text and the literal
    parameters SQLAlchemy generated (``param_1`` …), the types' bind processors (``UTCDateTime``
    refuses naive datetimes and converts to UTC) applied per call, and on error the same
    exception (``DBAPIError.instance``, parameters hidden when the engine hides them) and the
    same invalidation of a broken connection and of its pool generation, so the pool does not
    hand it, nor its siblings from before a server restart, out again.
    Not kept: engine events and SQL echo (``_driver_may_run`` falls back to SQLAlchemy then).
    """

    def __init__(self, stmt: ClauseElement, dialect: Dialect) -> None:
        compiled = stmt.compile(dialect=dialect)
        if (
            not isinstance(compiled, SQLCompiler)
            or compiled.positional
            or (compiled.post_compile_params or compiled.literal_execute_params)
        ):
            raise ValueError("DriverStatement needs named parameters rendered at compile time")
        self.sql = compiled.string
        self._dialect = dialect
        #: Literal values SQLAlchemy bound itself, already processed.
        self._fixed: dict[str, Any] = {}
        #: Bind processors of the per-call parameters that have one.
        self._processors: dict[str, Callable[[Any], Any]] = {}
        for bind, name in compiled.bind_names.items():
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.required:
                if process is not None:
                    self._processors[name] = process
            else:
                value = bind.effective_value
                self._fixed[name] = process(value) if process is not None else value

    def execute(self, conn: Connection, values: Mapping[str, Any]) -> Any | None:
        """Run with ``values`` (every required parameter) on ``conn``'s psycopg connection, in
        its autocommit mode; return the first row or None."""
        params = {**self._fixed, **values}
        try:
            for name, process in self._processors.items():
                params[name] = process(params[name])
        except Exception as exc:  # as SQLAlchemy: a StatementError naming the cause
            raise self._wrapped(conn, exc, params, disconnect=False) from exc
        driver: Any = conn.connection.driver_connection
        cursor: Any = None
        try:
            cursor = driver.cursor()
            try:
                cursor.execute(self.sql, params)
                return cursor.fetchone()
            finally:
                cursor.close()
        except self._dialect.loaded_dbapi.Error as exc:
            disconnect = self._dialect.is_disconnect(exc, driver, cursor)
            wrapped = self._wrapped(conn, exc, params, disconnect=disconnect)
            if disconnect:  # what Connection._handle_dbapi_exception does
                conn.engine.pool._invalidate(conn.connection, exc)
                conn.invalidate(exc)
            raise wrapped from exc
        except BaseException as exc:
            if not isinstance(exc, Exception):  # interrupted mid-statement: state unknown
                conn.invalidate(exc)
            raise

    def _wrapped(
        self, conn: Connection, exc: Exception, params: dict[str, Any], *, disconnect: bool
    ) -> BaseException:
        return sa_exc.DBAPIError.instance(
            self.sql,
            params,
            exc,
            self._dialect.loaded_dbapi.Error,
            hide_parameters=conn.engine.hide_parameters,
            connection_invalidated=disconnect,
            dialect=self._dialect,
        )


def _batch(**columns: TypeEngine[Any]) -> Subquery:
    """``SELECT CAST(value->>0 AS type) AS a, … FROM json_array_elements(CAST(:j_rows AS
    json))``: a batch of rows as one JSON text parameter (``_batch_rows``), so the statement
    text is fixed (prepared once by psycopg) and the rows are serialised by ``json.dumps`` in
    C. Array parameters, one per column, were dumped by psycopg element by element in
    Python: ~4 ms of client CPU per 200 slots."""
    rows = cast(bindparam("j_rows", type_=Text()), JSON)
    element = func.json_array_elements(rows).table_valued("value").render_derived(name="e")
    return select(
        *(
            cast(element.c.value.op("->>")(literal_column(str(i))), kind).label(name)
            for i, (name, kind) in enumerate(columns.items())
        )
    ).subquery("given")


def _batch_rows(rows: Sequence[Sequence[str | int | None]]) -> dict[str, str]:
    """``_batch``'s parameter: the rows as a JSON array of arrays, in its columns' order;
    times are passed as ISO 8601 text with their offset, which ``timestamptz`` reads exactly."""
    return {"j_rows": json.dumps(rows)}


def _json(json: Any, payload: Any) -> str | None:
    """A payload as JSON text for ``jsonb``; no payload stays NULL."""
    return None if payload is None else str(json.dumps(payload, ensure_ascii=False))
