"""MySQL 8 / MariaDB 10.6+: the worker's statements in ``mysql_claim.py``; here the
producer's (one job a fixed INSERT text, a batch one multi-row INSERT per packet), the
insert-if-absent with a SAVEPOINT, and the server's clock and indexes for ``status``.

Not ``INSERT IGNORE`` (it stores NULL as '' and truncates silently) and not a no-op
``ON DUPLICATE KEY UPDATE`` (its rowcount cannot tell new from existing).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    BindParameter,
    ColumnElement,
    Connection,
    Float,
    Select,
    cast,
    func,
    insert,
    literal,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.mysql import insert as mysql_insert

from migrate_cron.errors import UsageError
from migrate_cron.store.dialects.mysql import HOUR, force_index
from migrate_cron.store.dialects.mysql_claim import ClaimingStore
from migrate_cron.store.dialects.mysql_statements import (
    enqueue_sql,
)
from migrate_cron.store.models import JobState
from migrate_cron.store.rows import RowClaim
from migrate_cron.store.schema import UTCDateTime


class MySQLStore(ClaimingStore):
    family = "mysql"
    group_by_index_scan = True

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

    def _server_after_param(self, micros: BindParameter[int]) -> ColumnElement[datetime]:
        return func.timestampadd(
            literal_column("MICROSECOND"),
            micros,
            literal_column("UTC_TIMESTAMP(6)"),
            type_=UTCDateTime(),
        )

    def _server_after(self, seconds: float) -> ColumnElement[datetime]:
        return self._server_after_param(literal(round(seconds * 1_000_000), BigInteger()))

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
