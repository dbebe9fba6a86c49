"""MySQL 8 / MariaDB 10.6+: SKIP LOCKED select then UPDATE … WHERE id IN (…) in one
transaction (MariaDB has no UPDATE … RETURNING), and insert-if-absent with a SAVEPOINT.

Not ``INSERT IGNORE`` (it stores NULL as '' and truncates silently) and not a no-op
``ON DUPLICATE KEY UPDATE`` (its rowcount cannot tell new from existing).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Float,
    Select,
    cast,
    func,
    insert,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.mysql import insert as mysql_insert

from migrate_cron.errors import UsageError
from migrate_cron.store.dialects.mysql import HOUR, force_index
from migrate_cron.store.dialects.mysql_statements import (
    DONE_OUTCOME,
    attempts_insert_sql,
    attempts_params,
    claim_update_sql,
    claim_window_sql,
    claimed,
    done_update_sql,
    enqueue_sql,
    jobs_from_claim,
    runs_json,
    stamp,
)
from migrate_cron.store.models import AttemptRun, Job, JobState
from migrate_cron.store.rows import RowClaim
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.store.store import Store


class MySQLStore(Store):
    family = "mysql"
    group_by_index_scan = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The worker's statement texts, built on first use (``_text``).
        self._texts: dict[str, str] = {}

    def check_server(self, conn: Connection) -> None:
        """SKIP LOCKED needs MySQL 8.0.1+ or MariaDB 10.6+; ``JSON_TABLE`` (the worker's
        attempt history, ``mysql_statements.py``) MySQL 8.0.4+. Both predate MySQL 8's first
        GA release (8.0.11)."""
        dialect = conn.dialect
        version = dialect.server_version_info or (0,)
        mariadb = bool(getattr(dialect, "is_mariadb", False))
        if (mariadb and version < (10, 6)) or (not mariadb and version < (8, 0, 4)):
            name = "MariaDB" if mariadb else "MySQL"
            raise UsageError(
                f"{name} {'.'.join(map(str, version))} has no SKIP LOCKED or JSON_TABLE; "
                "migrate-cron needs MySQL 8.0.4+ or MariaDB 10.6+"
            )

    def _server_now(self) -> ColumnElement[datetime]:
        return literal_column("UTC_TIMESTAMP(6)", type_=UTCDateTime())

    def _server_hour(self) -> ColumnElement[datetime]:
        return literal_column(HOUR, type_=UTCDateTime())

    def _upsert_counts(self, conn: Connection, table: Any, values: dict[str, Any]) -> None:
        stmt = mysql_insert(table).values(values)
        conn.execute(
            stmt.on_duplicate_key_update({"count": table.c["count"] + stmt.inserted["count"]})
        )

    def _server_after(self, seconds: float) -> ColumnElement[datetime]:
        micros = round(seconds * 1_000_000)
        return func.timestampadd(
            literal_column("MICROSECOND"),
            micros,
            literal_column("UTC_TIMESTAMP(6)"),
            type_=UTCDateTime(),
        )

    def _upsert_rows(self, conn: Connection, table: Any, rows: list[dict[str, Any]]) -> None:
        keys = set(table.primary_key.columns)
        stmt = mysql_insert(table)  # one cached statement, executed with every row
        others = {c.name: stmt.inserted[c.name] for c in table.c if c not in keys}
        conn.execute(stmt.on_duplicate_key_update(others), rows)

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[Any]:
        micros = func.timestampdiff(literal_column("MICROSECOND"), start, end)
        return cast(micros, Float) / 1_000_000.0

    def histogram_percentiles(self, conn: Connection) -> bool:
        """Its window functions rank 143k rows in ~1.2 s, the histogram's two passes ~0.2 s."""
        return True

    def one_snapshot(self, conn: Connection) -> None:
        """Our connections read committed (a snapshot per statement); this transaction alone
        repeatable read (one snapshot, taken by its first read). One round trip, no lock."""
        conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))

    def through_index(self, stmt: Select[Any], table: Any, index: str) -> Select[Any]:
        return force_index(stmt, table, index)

    def duration_ticks(self, start: Any, end: Any) -> tuple[ColumnElement[Any], int]:
        """Whole microseconds: exact, where ``seconds_between``'s CAST AS FLOAT is single
        precision on MariaDB (7 digits)."""
        return func.timestampdiff(literal_column("MICROSECOND"), start, end), 1_000_000

    def epoch_seconds(self, column: Any) -> ColumnElement[Any]:
        # Not UNIX_TIMESTAMP(): it reads a DATETIME in the session's time zone; ours are UTC.
        return func.timestampdiff(
            literal_column("SECOND"),
            literal_column("'1970-01-01 00:00:00'"),
            column,
            type_=BigInteger,
        )

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
        """A job without a ref: one INSERT, a fixed text built once per store
        (``enqueue_sql``), the id from the driver's last insert id. The portable version
        builds and compiles a Core INSERT with the values on every call: 480 µs of client
        CPU an enqueue here, most of the call. With a ref (insert-if-absent under a
        SAVEPOINT) or an injected clock (tests), the portable version."""
        if ref is not None or self._clock is not None:
            return super()._insert_job(
                conn, kind, payload, ref, run_at, delay, max_attempts, scheduled_for
            )
        stamp_of = UTCDateTime().process_bind_param  # aware -> naive UTC; naive refused
        dialect = conn.dialect
        params = {
            "e_kind": kind,
            "e_payload": json.dumps(payload),
            "e_max_attempts": max_attempts,
            "e_run_at": stamp_of(run_at, dialect),
            "e_delay": round((delay or 0.0) * 1_000_000),
            "e_scheduled_for": stamp_of(scheduled_for, dialect),
        }
        new_id = conn.exec_driver_sql(self._text("enqueue", enqueue_sql), params).lastrowid
        self._notify(conn, kind)
        return new_id

    def _insert_if_absent(
        self, conn: Connection, table: Any, values: dict[str, Any], keys: Sequence[str]
    ) -> Any | None:
        try:
            with conn.begin_nested():
                result = conn.execute(insert(table).values(**values))
        except sa_exc.IntegrityError as exc:
            code = getattr(exc.orig, "args", [None])[0]
            if code == 1062:  # ER_DUP_ENTRY
                return None
            raise
        return result.inserted_primary_key[0] if result.inserted_primary_key else True

    def _insert_many_if_absent(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]]
    ) -> int:
        """No ON CONFLICT DO NOTHING here (and never INSERT IGNORE): read which (kind, ref) of
        the batch exist, insert the rest in one statement; a producer racing us on one of them
        (ER_DUP_ENTRY) sends the batch row by row through the SAVEPOINT insert."""
        if not rows:
            return 0
        kinds = {row["kind"] for row in rows}
        existing = {
            (kind, ref)
            for kind, ref in conn.execute(
                select(table.c.kind, table.c.ref).where(
                    table.c.kind.in_(kinds), table.c.ref.in_([row["ref"] for row in rows])
                )
            )
        }
        fresh = [row for row in rows if (row["kind"], row["ref"]) not in existing]
        if not fresh:
            return 0
        try:
            with conn.begin_nested():
                conn.execute(insert(table), fresh)
        except sa_exc.IntegrityError as exc:
            if getattr(exc.orig, "args", [None])[0] != 1062:  # ER_DUP_ENTRY
                raise
            keys = ("kind", "ref")
            return sum(self._insert_if_absent(conn, table, r, keys) is not None for r in fresh)
        return len(fresh)

    def _insert_open_jobs(
        self, conn: Connection, kind: str, payloads: Sequence[Any], max_attempts: int
    ) -> None:
        """One multi-row INSERT per batch. The portable executemany would be one statement
        per row here: PyMySQL folds an executemany into one INSERT only when its VALUES list
        is all parameters, and ours carries the server clock (``UTC_TIMESTAMP(6)``, fixed for
        the statement, so the batch shares one ``run_at`` as on PostgreSQL). A batch of big
        payloads is cut into statements under ``PACKET_BUDGET``: a whole statement must fit
        the server's ``max_allowed_packet``, where one row at a time only each row had to."""
        now = self.now_sql()
        same = {
            "kind": kind,
            "state": JobState.OPEN,
            "attempts": 0,
            "max_attempts": max_attempts,
            "run_at": now,
            "created_at": now,
        }
        for part in _packet_sized(payloads):
            conn.execute(insert(self.tables.job).values([{**same, "payload": p} for p in part]))
        self._notify(conn, kind)

    def _claim(
        self,
        conn: Connection,
        worker_id: str,
        n: int,
        lease: float,
        kinds: Sequence[str] | None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """The ready rows locked by their key (``claim_window_sql``), then UPDATE the picked
        ids, in the caller's transaction: fixed texts (``mysql_statements.py``), built once
        per store, their rows read by position. The first window is twice the batch (a
        second worker claiming at the same moment finds its batch past the first one's); a
        claim that comes back short (other claims hold rows of the window, or fewer are
        ready) looks once more past what it took, over ``WIDER`` times the batch. An
        injected clock (tests) keeps the Core version."""
        if self._clock is not None:
            return self._claim_core(conn, worker_id, n, lease, kinds, exclude)
        shape = (bool(kinds), bool(exclude))
        params: dict[str, Any] = {"c_n": n, "c_window": 2 * n}
        if kinds:
            params["c_kinds"] = list(kinds)
        if exclude:
            params["c_exclude"] = list(exclude)
        window = self._text(
            f"claim window {shape} False",
            lambda job: claim_window_sql(job, kinds=shape[0], exclude=shape[1]),
        )
        rows = claimed(conn.exec_driver_sql(window, params).fetchall())
        if len(rows) < n:
            got = [v[0] for v, _ in rows]
            again = self._text(
                f"claim window {shape} {bool(got)}",
                lambda job: claim_window_sql(job, kinds=shape[0], exclude=shape[1], got=bool(got)),
            )
            params.update(c_n=n - len(rows), c_window=WIDER * n, c_got=got)
            rows += claimed(conn.exec_driver_sql(again, params).fetchall())
        if not rows:
            return []
        now = stamp(rows[-1][0][-1])  # the last statement's clock: every row was ready then
        until = now + timedelta(seconds=lease)
        conn.exec_driver_sql(
            self._text("claim update", claim_update_sql),
            {
                "c_ids": [v[0] for v, _ in rows],
                "c_worker": worker_id,
                "c_until": until.replace(tzinfo=None),
                "c_now": now.replace(tzinfo=None),
            },
        )
        return jobs_from_claim(rows, worker_id, now, until)

    def _claim_core(
        self,
        conn: Connection,
        worker_id: str,
        n: int,
        lease: float,
        kinds: Sequence[str] | None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """The claim built with Core, on the store's clock (``now_sql``)."""
        job = self.tables.job
        c = job.c
        rows = conn.execute(
            select(
                c.id,
                c.kind,
                c.ref,
                c.payload,
                c.attempts,
                c.max_attempts,
                c.run_at,
                c.scheduled_for,
                c.last_error,
                c.output,
                c.created_at,
                self.now_sql().label("_now"),
            )
            .where(*self._ready_filter(kinds, exclude))
            .order_by(job.c.run_at, job.c.id)
            .limit(n)
            .with_for_update(skip_locked=True)
        ).all()
        if not rows:
            return []
        now = rows[0]._now
        if isinstance(now, datetime) and now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        until = now + timedelta(seconds=lease)
        ids = [r.id for r in rows]
        conn.execute(
            update(job)
            .where(job.c.id.in_(ids))
            .values(
                state=JobState.RUNNING,
                attempts=job.c.attempts + 1,
                locked_by=worker_id,
                locked_until=until,
                started_at=now,
                finished_at=None,
            )
        )
        running = JobState.RUNNING
        return [
            Job(r[0], r[1], r[2], r[3], running, r[4] + 1, r[5], r[6], r[7], worker_id, until,
                r[8], r[9], r[10], now, None)
            for r in rows
        ]  # fmt: skip

    def _complete_in_one(
        self,
        worker_id: str,
        ids: Sequence[int],
        runs: Mapping[int, AttemptRun],
        attempts: Mapping[int, int],
    ) -> int | None:
        """Every job of the batch has its run and its attempt: one transaction of fixed texts,
        the fenced UPDATE (one per attempt number, a batch holds one or two) and the history's
        ``INSERT … SELECT`` — three round trips with the COMMIT, where the portable path's
        two reads before the insert made five."""
        if len(runs) != len(ids) or any(i not in runs or i not in attempts for i in ids):
            return None
        with self.transaction() as conn:
            if not self._has_attempts(conn):
                return None
            groups: dict[int, list[int]] = {}
            for i in ids:
                groups.setdefault(attempts[i], []).append(int(i))
            sql = self._text("done", done_update_sql)
            written = 0
            for attempt, group in groups.items():
                params = {"f_ids": group, "f_worker": worker_id, "f_attempt": attempt}
                written += conn.exec_driver_sql(sql, params).rowcount
            if written:
                ready = self._has_console(conn)
                rows = runs_json(runs, ready, attempts)
                params = attempts_params(rows, worker_id, DONE_OUTCOME, (JobState.DONE,))
                conn.exec_driver_sql(self._attempts_sql(ready, by_attempt=True), params)
            return int(written)

    def _insert_attempts(
        self,
        conn: Connection,
        worker_id: str,
        outcome: str,
        states: Sequence[str],
        runs: Mapping[int, AttemptRun],
    ) -> int:
        """One ``INSERT … SELECT`` from the runs as a JSON parameter (``JSON_TABLE``), where
        the portable path reads the job rows and the runs present first. An injected clock
        (tests) keeps the portable path."""
        if self._clock is not None:
            return super()._insert_attempts(conn, worker_id, outcome, states, runs)
        ready = self._has_console(conn)
        params = attempts_params(runs_json(runs, ready), worker_id, outcome, states)
        return int(conn.exec_driver_sql(self._attempts_sql(ready, False), params).rowcount)

    def _attempts_sql(self, ready: bool, by_attempt: bool) -> str:
        attempts = self.engine.dialect.identifier_preparer.format_table(self.tables.attempts)
        return self._text(
            f"attempts {ready} {by_attempt}",
            lambda job: attempts_insert_sql(job, attempts, ready, by_attempt),
        )

    def _text(self, name: str, build: Callable[[str], str]) -> str:
        """A statement text built once per store from the job table's quoted name."""
        made = self._texts.get(name)
        if made is None:
            job = self.engine.dialect.identifier_preparer.format_table(self.tables.job)
            made = self._texts[name] = build(job)
        return made

    def _claim_rows(self, conn: Connection, request: RowClaim, n: int) -> list[tuple[Any, int]]:
        """As ``_claim``: SELECT … FOR UPDATE SKIP LOCKED, then UPDATE the picked keys in the
        same transaction (no UPDATE … RETURNING on MariaDB)."""
        rows = conn.execute(
            select(request.key, request.attempts)
            .where(*request.ready)
            .order_by(*request.order)
            .limit(n)
            .with_for_update(skip_locked=True)
        ).all()
        if not rows:
            return []
        keys = [r[0] for r in rows]
        conn.execute(
            update(request.table).where(request.key.in_(keys)).values(dict(request.values))
        )
        return [(r[0], int(r[1]) + 1) for r in rows]


#: The second look of a short claim reads this many times the batch: past rows that other
#: claims of the moment hold (each at most a batch), without a locking scan.
WIDER = 8

#: Payload text per multi-row INSERT (JSON, ASCII-escaped: characters are bytes), well under
#: MariaDB's default 16 MiB ``max_allowed_packet`` (MySQL 8's 64 MiB).
PACKET_BUDGET = 4 * 1024 * 1024


def _packet_sized(payloads: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``payloads`` in runs whose JSON text stays under ``PACKET_BUDGET`` (at least one
    payload a run: a single payload over the server's limit is refused as it was before)."""
    start, size = 0, 0
    for i, payload in enumerate(payloads):
        n = len(json.dumps(payload)) + 64  # the row's other values and separators
        if size + n > PACKET_BUDGET and i > start:
            yield payloads[start:i]
            start, size = i, 0
        size += n
    if start < len(payloads):
        yield payloads[start:]
