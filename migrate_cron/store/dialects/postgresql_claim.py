"""PostgreSQL's claim as one fixed text per shape, and its rows turned into ``Job`` values;
a batch of successes with its history in one statement (``_complete_in_one``).

The claim is the worker's hottest statement. Built with SQLAlchemy Core on every call (a CTE,
an UPDATE, the ready filter, cache keys for all of them) and read back through the column
types and ``Job(**row._mapping)``, it cost more client CPU than the rest of a no-op job
together. Here its text depends only on the table and on whether kinds are named or excluded
(they travel as arrays, so the text is the same for any kinds and any ``n``): psycopg
prepares it server-side after a few calls, and the rows are read positionally."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Table, select, update

from migrate_cron.store.dialects.postgresql_finish import (
    done_statement,
    fail_row,
    fail_statement,
    id_array,
)
from migrate_cron.store.dialects.postgresql_statements import attempt_row, batch_rows
from migrate_cron.store.fence import FenceColumns
from migrate_cron.store.models import AttemptRun, Failure, Job
from migrate_cron.store.store import Store
from migrate_cron.store.tables import Tables
from migrate_cron.vocabulary import JobState

#: The RETURNING list, in ``Job``'s field order (``jobs_from_rows`` reads it by position).
COLUMNS = (
    "id",
    "kind",
    "ref",
    "payload",
    "state",
    "attempts",
    "max_attempts",
    "run_at",
    "scheduled_for",
    "locked_by",
    "locked_until",
    "last_error",
    "output",
    "created_at",
    "started_at",
    "finished_at",
)
#: Positions of the timestamp columns in ``COLUMNS``.
_STAMPS = tuple(i for i, name in enumerate(COLUMNS) if name.endswith(("_at", "_for", "_until")))


def claim_sql(table: Table, quoted: str, *, kinds: bool, exclude: bool) -> str:
    """``WITH picked AS (SELECT id … FOR UPDATE SKIP LOCKED) UPDATE … RETURNING`` — the
    statement the Core version compiled to, with named parameters ``c_worker``, ``c_n``,
    ``c_lease`` (an interval), and ``c_kinds`` / ``c_exclude`` (text arrays) when asked for.
    ``quoted``: the table's name as the dialect quotes it."""
    missing = [c for c in COLUMNS if c not in table.c]
    if missing:
        raise ValueError(f"the job table has no column {missing[0]!r}")
    ready = [f"state = '{JobState.OPEN.value}'", "run_at <= now()"]
    if kinds:
        ready.append("kind = ANY(%(c_kinds)s::text[])")
    if exclude:
        ready.append("kind <> ALL(%(c_exclude)s::text[])")
    returning = ", ".join(f"j.{c}" for c in COLUMNS)
    return (
        f"WITH picked AS (SELECT id FROM {quoted} WHERE {' AND '.join(ready)} "
        "ORDER BY run_at, id LIMIT %(c_n)s FOR UPDATE SKIP LOCKED) "
        f"UPDATE {quoted} AS j SET state = '{JobState.RUNNING.value}', "
        "attempts = j.attempts + 1, locked_by = %(c_worker)s, "
        "locked_until = now() + %(c_lease)s, started_at = now(), finished_at = NULL "
        f"FROM picked WHERE j.id = picked.id RETURNING {returning}"
    )


def claim_params(
    worker_id: str, n: int, lease: Any, kinds: Sequence[str] | None, exclude: Sequence[str]
) -> dict[str, Any]:
    params: dict[str, Any] = {"c_worker": worker_id, "c_n": n, "c_lease": lease}
    if kinds:
        params["c_kinds"] = list(kinds)
    if exclude:
        params["c_exclude"] = list(exclude)
    return params


def jobs_from_rows(rows: Iterable[Sequence[Any]]) -> list[Job]:
    """``Job`` values from rows in ``COLUMNS`` order, as the column types would give them:
    timestamps aware in UTC (psycopg answers in the session's time zone), the payload as
    psycopg decoded the jsonb."""
    jobs = []
    for row in rows:
        values = list(row)
        for i in _STAMPS:
            stamp: datetime | None = values[i]
            if stamp is not None and stamp.tzinfo is not UTC:
                values[i] = (
                    stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)
                )
        jobs.append(Job(*values))
    return jobs


class ClaimingStore(Store):
    """PostgreSQL's claim, and the statements a store builds once (``_statement``)."""

    #: Statements built on first use (``_statement``); set by the store's ``__init__``.
    _statements: dict[str, Any]

    def _claim(
        self,
        conn: Connection,
        worker_id: str,
        n: int,
        lease: float,
        kinds: Sequence[str] | None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """One statement (``postgresql_claim.py``): its text fixed per shape, so psycopg
        prepares it, and its rows read positionally. An injected clock (tests) keeps Core."""
        if self._clock is not None:
            return self._claim_core(conn, worker_id, n, lease, kinds, exclude)
        shape = f"claim {bool(kinds)} {bool(exclude)}"
        sql = self._statement(shape, lambda: self._claim_text(bool(kinds), bool(exclude)))
        params = claim_params(worker_id, n, timedelta(seconds=lease), kinds, exclude)
        return jobs_from_rows(conn.exec_driver_sql(sql, params).all())

    def _claim_text(self, kinds: bool, exclude: bool) -> str:
        job = self.tables.job
        quoted = self.engine.dialect.identifier_preparer.format_table(job)
        return claim_sql(job, quoted, kinds=kinds, exclude=exclude)

    def _claim_connection(self) -> contextlib.AbstractContextManager[Connection]:
        """The claim is one statement: in autocommit it is its own transaction, one round
        trip instead of BEGIN + statement + COMMIT (the raw SKIP LOCKED loop's way)."""
        if self._clock is not None:
            return self.transaction()
        return self._autocommit()

    @contextlib.contextmanager
    def _autocommit(self) -> Iterator[Connection]:
        with self._translate_errors():
            conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            try:
                yield conn
            finally:
                conn.close()

    def _claim_core(
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

    def _complete_in_one(
        self,
        worker_id: str,
        ids: Sequence[int],
        runs: Mapping[int, AttemptRun],
        attempts: Mapping[int, int],
    ) -> int | None:
        """Every job of the batch has its run and its attempt: the finish and the history in
        one statement on its own (``done_statement``), one round trip where BEGIN, the fenced
        UPDATE, the history's INSERT and COMMIT were four."""
        if len(runs) != len(ids) or any(i not in runs or i not in attempts for i in ids):
            return None

        def rows(ready: bool) -> list[list[Any]]:
            return [[int(i), attempts[i], *attempt_row(runs[i], ready)] for i in ids]

        result = self._finish_in_one("done", done_statement, worker_id, rows)
        return None if result is None else int(result[0][0])

    def _fail_in_one(
        self, worker_id: str, failures: Sequence[Failure]
    ) -> dict[int, str | None] | None:
        """A batch of failures and their history in one statement on its own
        (``fail_statement``): one round trip where each failed job was a transaction of
        three statements. Each job's new state, None where the fence kept it out. Every
        failure needs its run and its attempt (the fence of a JSON row)."""
        runs = {f.job_id: f.run for f in failures if f.attempt is not None and f.run}
        if len(runs) != len(failures):
            return None

        def rows(ready: bool) -> list[list[Any]]:
            return [
                [f.job_id, f.attempt, *attempt_row(runs[f.job_id], ready), *fail_row(f)]
                for f in failures
            ]

        result = self._finish_in_one("fail", fail_statement, worker_id, rows)
        if result is None:
            return None
        states: dict[int, str | None] = {f.job_id: None for f in failures}
        states.update((int(job_id), str(state)) for job_id, state in result)
        return states

    def _finish_in_one(
        self,
        name: str,
        build: Callable[[Tables, FenceColumns, bool], Any],
        worker_id: str,
        rows: Callable[[bool], list[list[Any]]],
    ) -> list[Any] | None:
        """Run a finishing statement of ``postgresql_finish.py`` on its own (autocommit) and
        return its rows; None where the history table is missing (the caller's transaction
        writes without it). ``rows(ready)``: the JSON rows, with ``ready_at`` or not."""
        with self._autocommit() as conn:
            if not self._has_attempts(conn):
                return None
            ready = self._has_console(conn)
            stmt = self._statement(
                f"{name} {ready}", lambda: build(self.tables, self._fence_columns, ready)
            )
            data = rows(ready)
            params = {
                **batch_rows(data),
                "f_worker": worker_id,
                "f_ids": id_array(r[0] for r in data),
            }
            return list(conn.execute(stmt, params).all())

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
