"""PostgreSQL's own statements for the enqueue and the scheduler's slot chunk, built once per
store from its tables: each has a fixed text with bound parameters only, so psycopg prepares it
server-side, and a batch of rows travels as one JSON or array parameter, never as a VALUES
list that is a new text for every size."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    Interval,
    Select,
    Text,
    bindparam,
    cast,
    func,
    insert,
    literal,
    literal_column,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.sql.selectable import Subquery
from sqlalchemy.types import TypeEngine

from migrate_cron.store.attempts import run_values
from migrate_cron.store.models import AttemptRun
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.store.tables import Tables
from migrate_cron.vocabulary import JobState


def enqueue_statement(tables: Tables) -> Any:
    """``WITH ins AS (INSERT … ON CONFLICT (kind, ref) DO NOTHING RETURNING id, kind) SELECT
    id, pg_notify(channel, kind) FROM ins``: the wake-up is sent only for a row that was
    inserted (a NULL ref never conflicts). Parameters ``e_*``."""
    job = tables.job
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


def enqueue_many_statement(tables: Tables) -> Any:
    """A batch of open jobs of one kind, the payloads as one ``text[]`` parameter
    ``unnest``ed, and the batch's NOTIFY in the same statement. Parameters ``m_*``."""
    job = tables.job
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


def insert_rows_statement(table: Any, rows: list[dict[str, Any]]) -> Any:
    """The batch as three arrays (ref, payload, run_at) through ``unnest``: one short
    statement with a handful of parameters. The same 1,000 rows as a VALUES list spent most
    of their time in the driver parsing a long query text afresh each batch (3x slower).
    Every other column is the same for all rows of a batch (``enqueue_refs`` builds them)."""
    first = rows[0]
    source = (
        func.unnest(
            bindparam("refs", [r["ref"] for r in rows], type_=ARRAY(Text)),
            bindparam("payloads", [payload_json(r["payload"]) for r in rows], ARRAY(Text)),
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
    return (
        pg_insert(table)
        .from_select(list(columns), picked)
        .on_conflict_do_nothing()
        .returning(table.c.id)
    )


def recorded_slots_statement(tables: Tables, slot_results: Select[Any]) -> Any:
    """Each key of a ``batch_rows`` parameter looked up in the slot key's index — a fixed
    statement, prepared once, instead of two IN lists of ~200 parameters each, which
    SQLAlchemy expands into a new statement text per chunk. The lookup is a LATERAL subquery
    with ``OFFSET 0``, which keeps the planner from flattening it into a join: on a table
    whose statistics lag its growth (a scheduler's first hours) it chose a hash join over a
    scan of the whole table, 6 ms for 8 keys among 29,000 rows instead of 0.2 ms."""
    runs = tables.scheduled_runs
    given = batch(name=Text(), slot=UTCDateTime())
    found = (
        slot_results.where(runs.c.job_name == given.c.name, runs.c.scheduled_for == given.c.slot)
        .offset(0)
        .lateral("found")
    )
    return select(found).select_from(given).join(found, true())


def slot_rows_statement(tables: Tables, now: ColumnElement[datetime]) -> Any:
    """The chunk's slot rows, each already pointing at its job (or at none)."""
    given = batch(name=Text(), slot=UTCDateTime(), outcome=Text(), job=BigInteger())
    return insert(tables.scheduled_runs).from_select(
        ["job_name", "scheduled_for", "enqueued_at", "outcome", "job_id"],
        select(given.c.name, given.c.slot, now, given.c.outcome, given.c.job),
    )


def slot_jobs_statement(tables: Tables, now: ColumnElement[datetime]) -> Any:
    """The jobs with their drawn ids, and ``pg_notify`` once per kind inserted; ``now()``
    is the transaction's start, the same instant as the slot rows' ``enqueued_at``."""
    job = tables.job
    given = batch(id=BigInteger(), kind=Text(), ref=Text(), slot=UTCDateTime(), attempts=Integer())
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


def run_columns(*, attempt: bool, ready: bool) -> dict[str, TypeEngine[Any]]:
    """The runs' columns as the history statements receive them in their JSON parameter, in
    order (``attempt_row`` writes them): the job, its attempt (``done_statement``'s fence),
    the run's times and result, and ``ready_at`` where the database has schema step 5's."""
    columns: dict[str, TypeEngine[Any]] = {"job_id": BigInteger()}
    if attempt:
        columns["attempt"] = Integer()
    columns.update(
        started_at=UTCDateTime(),
        finished_at=UTCDateTime(),
        exit_code=Integer(),
        error=Text(),
        output_tail=Text(),
    )
    if ready:
        columns["ready_at"] = UTCDateTime()
    return columns


def attempts_statement(tables: Tables, with_ready: bool) -> Any:
    """The attempt history of a finished batch in one statement: ``INSERT INTO job_attempts
    … SELECT`` from the runs (one JSON parameter, ``attempts_rows``) joined to their job rows,
    for the jobs the same transaction just finished (``locked_by`` = the worker, ``state`` in
    ``a_states``) and whose run has no row yet (``NOT EXISTS`` on ``(job_id, started_at)``).
    ``with_ready``: the database has schema step 5's ``ready_at``."""
    job, att = tables.job, tables.attempts
    given = batch(**run_columns(attempt=False, ready=with_ready))
    worker = bindparam("a_worker", type_=Text())
    present = (
        select(att.c.id)
        .where(att.c.job_id == given.c.job_id, att.c.started_at == given.c.started_at)
        .exists()
    )
    values: list[Any] = [
        given.c.job_id,
        job.c.kind,
        job.c.attempts,
        worker,
        given.c.started_at,
        given.c.finished_at,
        bindparam("a_outcome", type_=Text()),
        given.c.exit_code,
        given.c.error,
        given.c.output_tail,
    ]
    names = ["job_id", "kind", "attempt", "worker", "started_at", "finished_at", "outcome"]
    names += ["exit_code", "error", "output_tail"]
    if with_ready:
        values.append(given.c.ready_at)
        names.append("ready_at")
    source = (
        select(*values)
        .select_from(given.join(job, job.c.id == given.c.job_id))
        .where(
            job.c.locked_by == worker,
            job.c.state == func.any(bindparam("a_states", type_=ARRAY(Text()))),
            ~present,
        )
    )
    return insert(att).from_select(names, source)


def batch(**columns: TypeEngine[Any]) -> Subquery:
    """``SELECT CAST(value->>0 AS type) AS a, … FROM json_array_elements(CAST(:j_rows AS
    json))``: a batch of rows as one JSON text parameter (``batch_rows``), so the statement
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


def batch_rows(rows: Sequence[Sequence[str | int | None]]) -> dict[str, str]:
    """``batch``'s parameter: the rows as a JSON array of arrays, in its columns' order;
    times are passed as ISO 8601 text with their offset, which ``timestamptz`` reads exactly."""
    return {"j_rows": json.dumps(rows)}


def attempt_row(run: AttemptRun, with_ready: bool) -> list[Any]:
    """One run as ``batch_rows`` carries it to the history (``attempts.run_values``), its
    times as ISO 8601 text with their offset."""
    return run_values(run, with_ready, _iso)


def _iso(stamp: datetime | None) -> str | None:
    return None if stamp is None else stamp.isoformat()


def payload_json(payload: Any) -> str | None:
    """A payload as JSON text for ``jsonb``; no payload stays NULL."""
    return None if payload is None else json.dumps(payload, ensure_ascii=False)
