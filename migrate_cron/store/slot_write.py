"""The write of one cron slot, spelled once: the slot row insert-if-absent on (job_name,
scheduled_for), the job row insert-if-absent on (kind, ref) (with its wake-up where the
database has one), then the link — in the caller's transaction, so the same locks in the same
order whoever writes. The texts are the dialect's named statements (``dialects/*.py``,
``Statements``).

Two callers differ only in how they reach the database: the Store runs it on a SQLAlchemy
connection (``SqlAlchemyCursor``: its errors wrapped and translated as every Store call's),
``direct.py`` on the driver's own cursor (no SQLAlchemy on cron's every-minute path). Standard
library only.

What the queue did for the slot that no row keeps is counted in ``job_tallies`` in the same
transaction (``Tally``): a slot another host had already recorded (a duplicate fire made one),
a slot due while a run still ran (held back by ``overlap``). Only those paths pay for it — the
usual slot, new and not overlapping, runs the same statements as before. A database at schema
step 4 has no tallies table: the count is given up inside a savepoint, the slot is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from migrate_cron.store.dialects import Stamp, Statements
from migrate_cron.store.faults import names_missing_table
from migrate_cron.store.keys import slot_ref, wake_channel
from migrate_cron.store.results import RunResult
from migrate_cron.vocabulary import SlotOutcome, Tally

if TYPE_CHECKING:  # a Protocol costs a cron call its creation; the type checker alone needs it
    from typing import Protocol

    class Cursor(Protocol):
        """What the write needs of a connection: a DB-API cursor's ``execute``, ``fetchone`` and
        ``lastrowid``."""

        @property
        def lastrowid(self) -> Any: ...

        def execute(self, sql: str, params: Any = ..., /) -> Any: ...

        def fetchone(self) -> Any: ...


@dataclass(frozen=True, eq=False, repr=False)  # cheap to define: cron imports it
class SlotWrite:
    """One dialect's statements for one prefix, and how values are bound there."""

    sql: Statements
    stamp: Stamp
    #: The wake-up channel (databases whose job insert notifies).
    channel: str
    #: "now" as a parameter (the process's or an injected clock); None: the server's.
    clock: Callable[[], datetime] | None

    @classmethod
    def of(
        cls, sql: Statements, stamp: Stamp, prefix: str, clock: Callable[[], datetime] | None
    ) -> SlotWrite:
        """The write for validated ``prefix``; ``clock`` None means the database's own where
        it has one (else this process's)."""
        if clock is None and sql.server_now is None:
            clock = _utcnow
        rendered = sql.render(prefix, process_clock=clock is not None)
        return cls(rendered, stamp, wake_channel(prefix), clock)

    def run(
        self,
        cur: Cursor,
        job_name: str,
        slot: datetime,
        *,
        max_attempts: int,
        kind: str | None = None,
        payload: Any = None,
        outcome: SlotOutcome = SlotOutcome.ENQUEUED,
        skip_if_running: bool = False,
        hold_if_running: bool = False,
    ) -> RunResult:
        """Record the slot (job_name, ``slot``) and, unless skipped, enqueue its job of
        ``kind`` (default: the job's name) with ``payload``. A slot recorded before answers
        what it was (and counts a duplicate fire). ``skip_if_running`` (``overlap = "skip"``)
        records it as skipped while a run of the kind is live; ``hold_if_running``
        (``overlap = "wait"``) enqueues it all the same: either way the start was held back
        and is counted."""
        sql = self.sql
        kind = kind or job_name
        slot = slot.astimezone(UTC)
        at = self.bind(slot)
        watch = (skip_if_running or hold_if_running) and outcome == SlotOutcome.ENQUEUED
        held = watch and _fetch(cur, sql.running, (kind, *self._now())) is not None
        if held and skip_if_running:
            outcome = SlotOutcome.SKIPPED
        run_id = self._insert(cur, sql.insert_run, (job_name, at, *self._now(), outcome))
        if run_id is None:
            job_id, was = _fetch(cur, sql.existing_run, (job_name, at))
            self.tally(cur, kind, Tally.DUPLICATE_FIRE)
            return RunResult(False, job_id, SlotOutcome(was))
        if held:
            self.tally(cur, kind, Tally.OVERLAP_HELD)
        if outcome == SlotOutcome.SKIPPED:
            return RunResult(True, None, SlotOutcome.SKIPPED)
        ref = slot_ref(slot)
        now = self._now()
        job = (kind, ref, json.dumps(payload), max_attempts, *now, at, *now)
        job_id = self._insert(cur, sql.insert_job, job + ((self.channel,) if sql.notifies else ()))
        if job_id is None:  # (kind, ref) was there: read it in a statement of its own
            job_id = _fetch(cur, sql.existing_job, (kind, ref))[0]
        cur.execute(sql.link, (job_id, run_id))
        return RunResult(True, int(job_id), SlotOutcome.ENQUEUED)

    def tally(self, cur: Cursor, kind: str, what: Tally, n: int = 1) -> None:
        """+``n`` on ``kind``'s ``what`` for the current hour, in the caller's transaction;
        nothing (and no error) where the table is not there yet (schema step 4)."""
        cur.execute("SAVEPOINT migrate_cron_tally")
        try:
            cur.execute(self.sql.tally, (kind, what.value, *self._hour(), n))
        except Exception as exc:
            if not names_missing_table(getattr(exc, "orig", None) or exc):
                raise
            cur.execute("ROLLBACK TO SAVEPOINT migrate_cron_tally")
        cur.execute("RELEASE SAVEPOINT migrate_cron_tally")

    def bind(self, t: datetime) -> Any:
        """A timestamp as ``schema.UTCDateTime`` binds it on this database."""
        if self.stamp is Stamp.AWARE:
            return t.astimezone(UTC)
        naive = t.astimezone(UTC).replace(tzinfo=None)
        if self.stamp is Stamp.NAIVE:
            return naive
        return naive.strftime("%Y-%m-%d %H:%M:%S.%f")

    def _now(self) -> tuple[Any, ...]:
        """ "now" as parameters: none when the statement text says the server's."""
        return () if self.clock is None else (self.bind(self.clock()),)

    def _hour(self) -> tuple[Any, ...]:
        """The current hour's start as a parameter: none when the text says the server's."""
        if self.sql.server_hour is not None:
            return ()
        return (self.bind(hour_of((self.clock or _utcnow)())),)

    def _insert(self, cur: Cursor, statement: str, params: tuple[Any, ...]) -> Any | None:
        """Insert-if-absent: the new row's id, or None when the unique key existed."""
        if self.sql.insert_returns_id:
            row = _fetch(cur, statement, params)
            return None if row is None else row[0]
        cur.execute("SAVEPOINT migrate_cron_slot")
        try:
            cur.execute(statement, params)
        except Exception as exc:
            if _error_code(exc) != self.sql.dup_key_error:
                raise
            cur.execute("ROLLBACK TO SAVEPOINT migrate_cron_slot")
            return None
        new_id = cur.lastrowid  # before RELEASE: every statement resets it
        cur.execute("RELEASE SAVEPOINT migrate_cron_slot")
        return new_id


class SqlAlchemyCursor:
    """``Cursor`` over a SQLAlchemy connection (``exec_driver_sql``): the Store's way in."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._result: Any = None

    def execute(self, sql: str, params: Any = None, /) -> Any:
        self._result = self._conn.exec_driver_sql(sql, params)
        return self._result

    def fetchone(self) -> Any:
        return self._result.fetchone()

    @property
    def lastrowid(self) -> Any:
        return self._result.lastrowid


def _fetch(cur: Cursor, statement: str, params: tuple[Any, ...]) -> Any:
    cur.execute(statement, params)
    return cur.fetchone()


def _error_code(exc: BaseException) -> Any:
    """The server's error code: the driver's first argument, or its wrapped error's."""
    args = getattr(getattr(exc, "orig", exc), "args", ())
    return args[0] if args else None


def _utcnow() -> datetime:
    return datetime.now(UTC)


def hour_of(t: datetime) -> datetime:
    """The start of the UTC hour ``t`` falls in: a tally's period."""
    return t.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
