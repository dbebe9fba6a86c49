"""The Store's foundation: engine, transactions, error translation and the dialect hooks.

The operations live in one module per table or concern (``jobs``, ``runs``, ``admin``,
``leases``, ``status``) and are composed into ``Store`` in ``store.py``. What differs per
dialect — "now" on the server's clock, claiming with SKIP LOCKED, insert-if-absent, wake-ups,
the few status expressions — is a named hook here that each database's Store subclass
(``dialects/*_store.py``) overrides; capabilities are properties (``supports_listen``) that
the loops ask, so no code outside ``store/`` needs to know which dialect is underneath.

Guarantees every implementation keeps (checked by ``tests/contract``):
- A claimed job is owned by exactly one worker (``locked_by``) until its lease ends.
- Finishing (``complete``, ``fail``, ``release``) is fenced by the attempt (``fence.py``):
  it lands while nobody else has claimed the job, even after the lease ran out; once another
  attempt took it over, or it is finished, it changes nothing. A ``heartbeat`` renews only a
  lease still ours (``locked_by = me AND state = 'running'``).
- Lease arithmetic uses the database server's clock (SQLite: the local clock, which is the
  database's), never the worker's — unless a test injects a clock.
- Enqueue is insert-if-absent on (kind, ref) and on (job_name, scheduled_for).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Select,
    insert,
    select,
)
from sqlalchemy import exc as sa_exc

from migrate_cron.clock import Clock
from migrate_cron.config import mask_url
from migrate_cron.errors import DatabaseUnavailable, DataRefused, SchemaMissing
from migrate_cron.store.clock_sql import DatabaseClock
from migrate_cron.store.deadline import WATCHDOG
from migrate_cron.store.dialects import dialect_for
from migrate_cron.store.dialects.entry import READONLY_OPTION
from migrate_cron.store.faults import first_line, names_missing_table, refuses_value
from migrate_cron.store.models import (
    Job,
    JobState,
)
from migrate_cron.store.schema import build_tables
from migrate_cron.store.tables import Tables

if TYPE_CHECKING:
    from migrate_cron.store.rows import RowClaim
    from migrate_cron.store.slot_write import SlotWrite

DEFAULT_MAX_ATTEMPTS = 5


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


class StoreBase(DatabaseClock):
    """Engine, transactions, error translation and the dialect hooks every operation uses."""

    family = "generic"
    #: Idle workers can block on a wake-up (``listener()``) instead of polling.
    supports_listen = False

    def __init__(self, engine: Engine, prefix: str = "", clock: Clock | None = None) -> None:
        self.engine = engine
        self.tables: Tables = build_tables(prefix)
        self.prefix = prefix
        self._clock = clock
        #: ``complete``'s fenced UPDATE, built on first use (``JobOps._done_statement``).
        self._done_update: Any = None
        #: ``fail``'s fenced UPDATE, built on first use (``JobOps._fail_statement``).
        self._fail_update: Any = None
        self.url_safe = mask_url(engine.url.render_as_string(hide_password=True))
        #: Whether the optional ``job_attempts`` table exists; None until first asked.
        self._attempts_table: bool | None = None
        self._console_table: bool | None = None
        #: This database's entry in ``dialects.DIALECTS``.
        self.dialect = dialect_for(engine.dialect.name)
        #: The cron slot's write (``runs.py``), built on first use.
        self._slot_writer: SlotWrite | None = None

    # ------------------------------------------------------------------ dialect hooks
    def _conflict_insert(self, table: Any) -> Any:
        """The dialect's INSERT construct with ``on_conflict_do_update`` (PostgreSQL, SQLite);
        a dialect without one overrides the upserts that use it instead."""
        raise NotImplementedError

    def _insert_if_absent(
        self, conn: Connection, table: Any, values: dict[str, Any], keys: Sequence[str]
    ) -> Any | None:
        """Insert a row unless one with the same ``keys`` exists; return its primary key, or
        None when a row with those keys was already there."""
        raise NotImplementedError

    def _insert_many_if_absent(
        self, conn: Connection, table: Any, rows: list[dict[str, Any]]
    ) -> int:
        """Insert ``rows`` (distinct on the table's unique key) in one statement, skipping those
        whose key exists; return how many were inserted."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _producer_connection(self) -> Iterator[Connection]:
        """The connection ``enqueue``/``enqueue_many`` write through when the caller passes
        none: a transaction here; PostgreSQL overrides it with an autocommit connection, where
        its one-statement inserts cost one round trip instead of three (BEGIN, the statement,
        COMMIT)."""
        with self.transaction() as conn:
            yield conn

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
        """Insert one open job and wake idle workers; return its id, or None when ``ref`` is
        set and (kind, ref) already exists (nothing inserted, nobody woken). ``run_at`` None
        means ``delay`` seconds (or nothing) after now on the database's clock. The portable
        version: an INSERT (insert-if-absent with a ref), then the dialect's wake-up."""
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
            "state": JobState.OPEN,
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
                return None
        self._notify(conn, kind)
        return new_id

    def _insert_open_jobs(
        self, conn: Connection, kind: str, payloads: Sequence[Any], max_attempts: int
    ) -> None:
        """Insert one ready job of ``kind`` per payload (no ref) and wake idle workers once.
        The portable version: one cached INSERT with one parameter set per row (the driver's
        executemany / SQLAlchemy's insertmanyvalues), then the wake-up."""
        job = self.tables.job
        stmt = insert(job).values(
            kind=kind,
            state=JobState.OPEN,
            attempts=0,
            max_attempts=max_attempts,
            run_at=self.now_sql(),
            created_at=self.now_sql(),
        )
        conn.execute(stmt, [{"payload": p} for p in payloads])
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
        raise NotImplementedError

    def _claim_rows(self, conn: Connection, request: RowClaim, n: int) -> list[tuple[Any, int]]:
        """Claim up to ``n`` ready rows of a business table (``rows.py``): write
        ``request.values`` to them and return each one's (key, attempts after the claim)."""
        raise NotImplementedError

    def _notify(self, conn: Connection, kind: str) -> None:
        """Wake idle workers after the enqueuing transaction commits (PostgreSQL only)."""
        return None

    def _notify_kinds(self, conn: Connection, kinds: Sequence[str]) -> None:
        """``_notify`` for each of ``kinds`` (a dialect may send them in one statement)."""
        for kind in kinds:
            self._notify(conn, kind)

    def listener(self) -> Listener:
        """A wake-up source for idle workers."""
        return Listener()

    # ------------------------------------------------------------------ status hooks
    #: ``percentile_cont(p) WITHIN GROUP`` is native (else ranks are picked with window functions).
    supports_percentile_cont = False
    #: ``GROUP BY kind, state`` + ``MAX()`` is answered by a loose index scan ("index for
    #: group-by"); without it distinct values are found by hopping through the index.
    group_by_index_scan = False

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[Any]:
        """``end - start`` in seconds, as a SQL expression."""
        raise NotImplementedError

    def histogram_percentiles(self, conn: Connection) -> bool:
        """Status's percentiles (without ``percentile_cont``) from a histogram and the few
        buckets holding the needed ranks (``percentiles.py``), not by ranking every row."""
        return False

    def duration_ticks(self, start: Any, end: Any) -> tuple[ColumnElement[Any], int]:
        """``end - start`` as an exact integer SQL expression, and its ticks per second: the
        precision ``seconds_between`` has."""
        raise NotImplementedError

    def epoch_seconds(self, column: Any) -> ColumnElement[Any]:
        """A UTC timestamp column as whole seconds since 1970 (floored), an integer SQL
        expression: the trend charts' buckets are this divided by their step."""
        raise NotImplementedError

    def one_snapshot(self, conn: Connection) -> None:
        """Make the read transaction just begun on ``conn`` see one snapshot in all its
        statements (status's percentiles read the window twice). Before its first statement."""

    def through_index(self, stmt: Select[Any], table: Any, index: str) -> Select[Any]:
        """``stmt`` reading ``table`` through the index named ``index``, where a planner
        would otherwise pick a worse one."""
        return stmt

    def unindexed(self, column: Any) -> Any:
        """``column`` as the planner should read it when grouping the few live rows (SQLite
        overrides this to keep its planner off the whole (kind, …) index)."""
        return column

    # ------------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def transaction(self, readonly: bool = False) -> Iterator[Connection]:
        """A connection in a transaction, with database errors turned into user errors."""
        with self._translate_errors():
            conn = self.engine.connect()
            try:
                if readonly:
                    conn = conn.execution_options(**{READONLY_OPTION: True})
                with conn.begin():
                    yield conn
            finally:
                conn.close()

    @contextlib.contextmanager
    def _translate_errors(self) -> Iterator[None]:
        try:
            yield
        except (
            sa_exc.OperationalError,
            sa_exc.ProgrammingError,
            sa_exc.InterfaceError,
            sa_exc.DataError,
        ) as exc:
            raise self.translate(exc) from exc
        except sa_exc.DBAPIError as exc:
            if exc.connection_invalidated:  # a server that is no longer the primary (engine.py)
                raise self.translate(exc) from exc
            raise

    def translate(self, exc: Exception) -> Exception:
        """Turn a driver error into DatabaseUnavailable / SchemaMissing / DataRefused (a value
        refused, never to be waited out like an outage) with a masked URL."""
        orig = getattr(exc, "orig", exc)
        text = first_line(orig)
        if refuses_value(orig):
            return DataRefused(mask_url(text))
        if names_missing_table(orig):
            return SchemaMissing(
                f"the queue tables are missing in {self.url_safe} ({mask_url(text)}); "
                "run `migrate-cron db upgrade` first"
            )
        if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError) or getattr(
            exc, "connection_invalidated", False
        ):
            overran = WATCHDOG.overran()
            if overran is not None:  # our deadline closed it, not the server (``deadline.py``)
                text = f"no answer within {overran:g}s (the connection was given up)"
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
        self._attempts_table = None
        self._console_table = None

    def drop_schema(self) -> None:
        with self._translate_errors():
            self.tables.metadata.drop_all(self.engine)
        self._attempts_table = None
        self._console_table = None

    def db_now(self) -> datetime:
        with self.transaction(readonly=True) as conn:
            value = conn.execute(select(self.now_sql())).scalar_one()
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value if value.tzinfo else value.replace(tzinfo=UTC)


def describe_error(exc: BaseException) -> str:
    """A one-line description of a database error for logs: the driver's own first line,
    never the statement's parameters (they may hold job output or payloads)."""
    orig = getattr(exc, "orig", None) or exc
    first = str(orig).strip().splitlines()[0] if str(orig).strip() else ""
    if "[parameters:" in first:
        first = first.split("[parameters:", 1)[0].strip()
    return f"{type(orig).__name__}: {mask_url(first)[:300]}" if first else type(orig).__name__


def aware(value: Any) -> datetime:
    """A timestamp read back from the database (a datetime, or text from a SQL function on
    SQLite) as an aware UTC datetime."""
    stamp: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def aware_or_none(value: Any) -> datetime | None:
    """``aware``, passing NULL through."""
    return None if value is None else aware(value)
