"""SQLite: the embedded default. Writers take the lock up front (BEGIN IMMEDIATE, see
``engine.py``), then claim with one ``UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING``.
SQLite has no SKIP LOCKED and needs none: one writer at a time. The database's clock is the
local clock, so "now" is bound from Python."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Integer,
    cast,
    func,
    literal,
    select,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from migrate_cron.store.attempts import run_values
from migrate_cron.store.models import AttemptRun, Job
from migrate_cron.store.rows import RowClaim
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.store.slot_write import hour_of
from migrate_cron.store.store import Store


class SQLiteStore(Store):
    family = "sqlite"
    #: Whether this SQLite has ``ln()`` (built with its math functions), once asked.
    _has_ln: bool | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: ``history_sql``'s text, with ``ready_at`` or not, built on first use.
        self._history_sql: dict[bool, str] = {}

    def histogram_percentiles(self, conn: Connection) -> bool:
        """A quarter faster than ranking every row (143k runs: 0.64 s against 0.84 s for all
        of status), where the library has ``ln()``; not every SQLite is built with it."""
        if self._has_ln is None:
            try:
                conn.execute(select(func.ln(1)))
                self._has_ln = True
            except sa_exc.OperationalError:
                self._has_ln = False
        return self._has_ln

    def _server_now(self) -> ColumnElement[datetime]:
        return literal(datetime.now(UTC), UTCDateTime())

    def _server_after(self, seconds: float) -> ColumnElement[datetime]:
        return literal(datetime.now(UTC) + timedelta(seconds=seconds), UTCDateTime())

    def _server_hour(self) -> ColumnElement[datetime]:
        return literal(hour_of(datetime.now(UTC)), UTCDateTime())

    def _conflict_insert(self, table: Any) -> Any:
        return sqlite_insert(table)

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[Any]:
        # julianday() reads our 'YYYY-MM-DD HH:MM:SS.ffffff' text to the millisecond; rounding
        # to 3 decimals removes its floating-point noise (twice as fast as splitting the text
        # into whole seconds and fraction, which matters when ranking 100k+ rows).
        return func.round((func.julianday(end) - func.julianday(start)) * 86400.0, 3, type_=Float)

    def duration_ticks(self, start: Any, end: Any) -> tuple[ColumnElement[Any], int]:
        # Milliseconds, as ``seconds_between`` rounds them.
        millis = func.round((func.julianday(end) - func.julianday(start)) * 86_400_000.0)
        return cast(millis, Integer), 1000

    def epoch_seconds(self, column: Any) -> ColumnElement[Any]:
        # strftime('%s') reads our UTC text and drops the fraction (floor: all after 1970).
        return cast(func.strftime("%s", column), Integer)

    def unindexed(self, column: Any) -> Any:
        """``+column``, SQLite's documented way to keep the planner from walking the whole
        (kind, …) index to save a sort: it reads the few live rows through the state indexes
        instead (1M done rows: 290 ms → 2 ms)."""
        from sqlalchemy.sql import operators
        from sqlalchemy.sql.elements import UnaryExpression

        return UnaryExpression(column, operator=operators.custom_op("+"), type_=column.type)

    def _insert_if_absent(
        self, conn: Connection, table: Any, values: dict[str, Any], keys: Sequence[str]
    ) -> Any | None:
        pk = next(iter(table.primary_key.columns))
        stmt = (
            sqlite_insert(table)
            .values(**values)
            .on_conflict_do_nothing(index_elements=list(keys))
            .returning(pk)
        )
        return conn.execute(stmt).scalar_one_or_none()

    def _insert_many_if_absent(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]]
    ) -> int:
        if not rows:
            return 0
        pk = next(iter(table.primary_key.columns))
        # RETURNING counts what was inserted: a multi-row statement's rowcount is not reliable.
        stmt = sqlite_insert(table).on_conflict_do_nothing().returning(pk)
        return len(conn.execute(stmt, rows).all())

    def _insert_attempts(
        self,
        conn: Connection,
        worker_id: str,
        outcome: str,
        states: Sequence[str],
        runs: Mapping[int, AttemptRun],
    ) -> int:
        """The history of a batch in one ``INSERT … SELECT`` from ``json_each`` over the runs
        (one JSON parameter), as MariaDB's ``JSON_TABLE``: a fixed text, where the portable
        three statements were the largest part of a SQLite worker's CPU per job (~23 %,
        docs/benchmarks.md). Times travel as the text SQLAlchemy stores (``sqlite_stamp``),
        so the ``NOT EXISTS`` on ``(job_id, started_at)`` compares like with like."""
        if sqlite3.sqlite_version_info < JSON_BUILT_IN:
            return super()._insert_attempts(conn, worker_id, outcome, states, runs)
        ready = self._has_console(conn)
        rows = [[job_id, *run_values(run, ready, sqlite_stamp)] for job_id, run in runs.items()]
        params = {
            "a_rows": json.dumps(rows),
            "a_states": json.dumps(list(states)),
            "a_worker": worker_id,
            "a_outcome": outcome,
        }
        sql = self._history_sql.get(ready)
        if sql is None:
            quote = self.engine.dialect.identifier_preparer.format_table
            sql = history_sql(quote(self.tables.job), quote(self.tables.attempts), ready)
            self._history_sql[ready] = sql
        return int(conn.exec_driver_sql(sql, params).rowcount)

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
            .scalar_subquery()
        )
        stmt = (
            update(job)
            .where(job.c.id.in_(picked))
            .values(**self._claim_values(worker_id, lease))
            .returning(*job.c)
        )
        return [Job(*r) for r in conn.execute(stmt)]  # ``job.c`` is ``Job``'s field order

    def _claim_rows(self, conn: Connection, request: RowClaim, n: int) -> list[tuple[Any, int]]:
        """As ``_claim``: the writer lock is taken by BEGIN IMMEDIATE, then one UPDATE of the
        first ``n`` ready keys, RETURNING them."""
        picked = (
            select(request.key)
            .where(*request.ready)
            .order_by(*request.order)
            .limit(n)
            .scalar_subquery()
        )
        stmt = (
            update(request.table)
            .where(request.key.in_(picked))
            .values(dict(request.values))
            .returning(request.key, request.attempts)
        )
        return [(r[0], int(r[1])) for r in conn.execute(stmt).all()]


#: The first SQLite whose JSON functions are built in unless left out on purpose.
JSON_BUILT_IN = (3, 38, 0)


def sqlite_stamp(stamp: datetime | None) -> str | None:
    """A time as SQLAlchemy's SQLite ``DATETIME`` stores it (naive UTC, microseconds always),
    for a value that reaches a column through SQL text instead of the column's type."""
    if stamp is None:
        return None
    return stamp.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def history_sql(job: str, att: str, with_ready: bool) -> str:
    """``_insert_attempts``'s statement: parameters ``a_rows`` (a JSON array of [job id,
    started, finished, exit code, error, output tail(, ready)]), ``a_states`` (a JSON array),
    ``a_worker``, ``a_outcome``. A run is recorded for a job this worker holds in one of the
    states, once. ``job``, ``att``: the tables' names as the dialect quotes them."""
    names = ["job_id", "kind", "attempt", "worker", "started_at", "finished_at", "outcome"]
    names += ["exit_code", "error", "output_tail"]
    values = ["j.id", "j.kind", "j.attempts", ":a_worker", _item(1), _item(2), ":a_outcome"]
    values += [_item(3), _item(4), _item(5)]
    if with_ready:
        names.append("ready_at")
        values.append(_item(6))
    return (
        f"INSERT INTO {att} ({', '.join(names)}) SELECT {', '.join(values)} "
        f"FROM json_each(:a_rows) AS e JOIN {job} AS j ON j.id = {_item(0)} "
        "WHERE j.locked_by = :a_worker "
        "AND j.state IN (SELECT value FROM json_each(:a_states)) "
        f"AND NOT EXISTS (SELECT 1 FROM {att} AS a "
        f"WHERE a.job_id = j.id AND a.started_at = {_item(1)})"
    )


def _item(i: int) -> str:
    return f"json_extract(e.value, '$[{i}]')"
