"""The worker processes (``job_workers``): one row each, written at start, renewed by the
heartbeat, closed by a graceful stop.

Running jobs name their worker (``locked_by``), but an idle worker holds no job: without this
table the console cannot tell "no worker runs" from "every worker is idle". The heartbeat
renews the row with one UPDATE (``worker_seen``), so a worker that stopped renewing is seen as
gone, and one that stopped on purpose says so (``stopped_at``). A row found missing at a
heartbeat (pruned by ``cleanup``, a database restored from a backup) is written again whole.

On a database not yet at schema step 5 every write is skipped and the list is empty
(``console_enabled``): the worker runs as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.base import aware, aware_or_none
from migrate_cron.store.storable import storable

#: The user name a worker running as uid 0 records: it can run a job as any user.
ROOT_USER = "root"
#: Characters of the kinds list kept (a worker serving thousands of registry jobs).
KINDS_WIDTH = 8000
#: How far back ``workers`` looks by default (seconds): a day of starts and stops.
WORKERS_HORIZON = 86400.0
#: Heartbeats a worker may miss before it is gone (the console's Workers page, ``verify``).
MISSED_BEATS = 3
#: Seconds of silence after which a worker whose row does not say its ``--heartbeat`` is
#: gone: three default heartbeats, the default lease.
GONE_AFTER = 30.0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What a worker says of itself at start. ``kinds`` None: it claims any kind."""

    name: str
    host: str
    run_as: str
    kinds: Sequence[str] | None
    pid: int
    concurrency: int
    #: Seconds between its heartbeats (None: not said).
    heartbeat: float | None = None

    @property
    def any_user(self) -> bool:
        """Whether it can run a job as another user (it runs as root)."""
        return self.run_as == ROOT_USER


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """One ``job_workers`` row, with its heartbeat's age on the database's clock."""

    name: str
    host: str
    run_as: str | None
    kinds: tuple[str, ...] | None
    pid: int | None
    concurrency: int
    in_flight: int
    started_at: datetime
    last_seen: datetime
    stopped_at: datetime | None
    #: Seconds since ``last_seen`` (database clock).
    seen_ago: float
    #: Seconds between its heartbeats, as it said at start (None: not said).
    heartbeat: float | None = None

    @property
    def any_user(self) -> bool:
        return self.run_as == ROOT_USER

    @property
    def silence_limit(self) -> float:
        """Seconds without a heartbeat after which this worker is gone."""
        return MISSED_BEATS * self.heartbeat if self.heartbeat else GONE_AFTER

    @property
    def heartbeating(self) -> bool:
        """Running and renewing its row: not stopped, not silent past its limit."""
        return self.stopped_at is None and self.seen_ago <= self.silence_limit

    def can_run(self, kind: str, user: str | None) -> bool | None:
        """Whether this worker claims ``kind`` and can run it as ``user`` (None: as itself);
        None when its kinds list was cut at ``KINDS_WIDTH`` and may go on past it."""
        if user is not None and not self.any_user and self.run_as != user:
            return False
        if self.kinds is None or kind in self.kinds:
            return True
        return None if len(",".join(self.kinds)) >= KINDS_WIDTH - 255 else False


class WorkerOps(AttemptOps):
    """Write and read the worker rows."""

    def worker_started(self, info: WorkerInfo) -> bool:
        """Write this worker's row (again, if its name was used before); False when the
        database has no ``job_workers`` table yet."""
        with self.transaction() as conn:
            return self._write_worker(conn, info)

    def worker_seen(self, info: WorkerInfo, in_flight: int) -> bool:
        """The heartbeat: ``last_seen`` now and the jobs held, one UPDATE (the whole row when
        it went missing); False when there is no table."""
        with self.transaction() as conn:
            if not self._has_console(conn):
                return False
            workers = self.tables.workers
            res = conn.execute(
                update(workers)
                .where(workers.c.name == info.name)
                .values(last_seen=self.now_sql(), in_flight=in_flight, stopped_at=None)
            )
            if res.rowcount == 0:
                self._write_worker(conn, info, in_flight)
            return True

    def worker_stopped(self, name: str) -> bool:
        """A graceful stop: ``stopped_at`` (and ``last_seen``) now, nothing in flight."""
        with self.transaction() as conn:
            if not self._has_console(conn):
                return False
            workers = self.tables.workers
            conn.execute(
                update(workers)
                .where(workers.c.name == name)
                .values(stopped_at=self.now_sql(), last_seen=self.now_sql(), in_flight=0)
            )
            return True

    def workers(self, horizon: float = WORKERS_HORIZON) -> list[WorkerRecord]:
        """Every worker seen within ``horizon`` seconds (running, stopped or gone), by host
        and name."""
        if not self.console_enabled():
            return []
        workers = self.tables.workers
        q = (
            select(workers, self.seconds_between(workers.c.last_seen, self.now_sql()).label("ago"))
            .where(workers.c.last_seen >= self.after_sql(-horizon))
            .order_by(workers.c.host, workers.c.name)
        )
        with self.transaction(readonly=True) as conn:
            rows = conn.execute(q).all()
        return [_record(r) for r in rows]

    # ------------------------------------------------------------------ helpers
    def _write_worker(self, conn: Connection, info: WorkerInfo, in_flight: int = 0) -> bool:
        if not self._has_console(conn):
            return False
        workers = self.tables.workers
        kinds = None if info.kinds is None else ",".join(info.kinds)[:KINDS_WIDTH]
        values: dict[str, Any] = {
            "host": info.host[:255],
            "run_as": info.run_as[:255],
            "kinds": storable(kinds),
            "pid": info.pid,
            "concurrency": info.concurrency,
            "heartbeat": info.heartbeat,
            "in_flight": in_flight,
            "started_at": self.now_sql(),
            "last_seen": self.now_sql(),
            "stopped_at": None,
        }
        res = conn.execute(update(workers).where(workers.c.name == info.name).values(**values))
        if res.rowcount == 0:
            conn.execute(insert(workers).values(name=info.name, **values))
        return True

    def _prune_workers(self, age: float, on_progress: Callable[[str, int], None] | None) -> int:
        """Delete the rows of workers not seen for ``age`` seconds (``cleanup``): a few rows
        per worker start, so one statement."""
        if not self.console_enabled():
            return 0
        workers = self.tables.workers
        with self.transaction() as conn:
            n = int(
                conn.execute(
                    delete(workers).where(workers.c.last_seen < self.after_sql(-age))
                ).rowcount
            )
        if on_progress:
            on_progress(workers.name, n)
        return n


def _record(row: Any) -> WorkerRecord:
    kinds = row.kinds
    return WorkerRecord(
        name=row.name,
        host=row.host,
        run_as=row.run_as,
        kinds=None if kinds is None else tuple(k for k in kinds.split(",") if k),
        pid=row.pid,
        concurrency=int(row.concurrency),
        in_flight=int(row.in_flight),
        started_at=aware(row.started_at),
        last_seen=aware(row.last_seen),
        stopped_at=aware_or_none(row.stopped_at),
        seen_ago=max(0.0, float(row.ago or 0.0)),
        heartbeat=None if row.heartbeat is None else float(row.heartbeat),
    )
