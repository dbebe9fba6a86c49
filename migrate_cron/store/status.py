"""The status queries: what an operator needs to know, cheap on a table of millions of done rows.

Read-only statements in one transaction, each bounded by an index rather than by the size of
the table:

- **live**: counts per kind and state for everything *not* done (open, running, failed,
  cancelled) and the oldest ready ``run_at``. Done rows are excluded by the ``state IN`` list,
  so the planner reads the claim / state indexes, never the done rows.
- **durations**: run time (``finished_at - started_at``) of jobs done inside the window
  (``finished_at >= since``), via the ``(state, finished_at)`` index. Percentiles are linear
  interpolation between ranks (``percentile_cont``), the same definition on every backend:
  PostgreSQL computes them natively; elsewhere window functions rank the rows in the database
  and only the few rows at the needed ranks come back.
- **last**: the newest success and failure per kind, all time. Kinds are listed with a loose
  index scan (a recursive CTE that hops from one kind to the next on the ``(kind, state,
  finished_at)`` index) and each answer is one index probe, whatever the number of done rows.
- **slots**: the newest ``scheduled_runs`` row per scheduled job (loose scan on the slot key),
  then those rows by primary key with the state and start time of the job each enqueued.

"Done" in the answer means done inside the window; failed and cancelled are all-time counts
(a permanently failed job needs a person until someone retries or cancels it).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Integer,
    Select,
    and_,
    case,
    cast,
    func,
    literal,
    literal_column,
    select,
)

from migrate_cron.store.models import KindStatus, QueueStatus, SlotStatus
from migrate_cron.store.schema import UTCDateTime

if TYPE_CHECKING:
    from migrate_cron.store.base import Store

PERCENTILES = (0.5, 0.95)
LIVE_STATES = ("open", "running", "failed", "cancelled")


class StatusQueries:
    """Builds and runs the status statements for one store (tables, prefix, dialect)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.job = store.tables.job
        self.runs = store.tables.scheduled_runs

    # ------------------------------------------------------------------ statements
    def live_sql(self, now: datetime) -> Select[Any]:
        job = self.job
        at = literal(now, UTCDateTime())
        ready = job.c.run_at <= at
        return (
            select(
                job.c.kind,
                job.c.state,
                func.count().label("n"),
                func.sum(case((ready, 1), else_=0)).label("ready"),
                func.min(case((ready, job.c.run_at), else_=None), type_=UTCDateTime()).label(
                    "oldest_ready"
                ),
            )
            .where(job.c.state.in_(LIVE_STATES))
            .group_by(job.c.kind, job.c.state)
        )

    def durations_sql(self, since: datetime) -> Select[Any]:
        """PostgreSQL: one aggregate row per kind. Elsewhere: the rows at the needed ranks."""
        job = self.job
        seconds = self._seconds(job.c.started_at, job.c.finished_at)
        window = and_(
            job.c.state == "done",
            job.c.finished_at >= literal(since, UTCDateTime()),
            job.c.started_at.is_not(None),
        )
        if self.store.family == "postgresql":
            return (
                select(
                    job.c.kind,
                    func.count().label("n"),
                    func.max(seconds).label("max"),
                    *(
                        func.percentile_cont(p).within_group(seconds).label(f"p{i}")
                        for i, p in enumerate(PERCENTILES)
                    ),
                )
                .where(window)
                .group_by(job.c.kind)
            )
        base = select(job.c.kind, seconds.label("d")).where(window).subquery("w")
        ranked = select(
            base.c.kind,
            base.c.d,
            func.row_number().over(partition_by=base.c.kind, order_by=base.c.d).label("rn"),
            func.count().over(partition_by=base.c.kind).label("n"),
        ).subquery("r")
        wanted = [ranked.c.rn == ranked.c.n]
        for p in PERCENTILES:
            # percentile_cont position h = p * (n - 1) (0-based): ranks floor(h)+1, ceil(h)+1,
            # written in integer arithmetic (p as a fraction num/100) so every dialect agrees.
            num = round(p * 100)
            wanted.append(ranked.c.rn == (num * (ranked.c.n - 1)) // 100 + 1)
            wanted.append(ranked.c.rn == (num * (ranked.c.n - 1) + 99) // 100 + 1)
        from sqlalchemy import or_

        return select(ranked.c.kind, ranked.c.d, ranked.c.rn, ranked.c.n).where(or_(*wanted))

    def last_sql(self) -> Select[Any]:
        job = self.job
        kinds = self._distinct(job, job.c.kind, "kinds")
        probe = job.alias("probe")

        def newest(state: str) -> Any:
            return (
                select(func.max(probe.c.finished_at))
                .where(probe.c.kind == kinds.c.value, probe.c.state == state)
                .scalar_subquery()
            )

        return select(
            kinds.c.value.label("kind"),
            newest("done").label("last_success"),
            newest("failed").label("last_failure"),
        ).where(kinds.c.value.is_not(None))

    def newest_slots_sql(self) -> Select[Any]:
        """The id of the newest slot row of each job name (loose scan + one probe each)."""
        runs = self.runs
        names = self._distinct(runs, runs.c.job_name, "names")
        probe = runs.alias("probe")
        newest_id = (
            select(probe.c.id)
            .where(probe.c.job_name == names.c.value)
            .order_by(probe.c.scheduled_for.desc())
            .limit(1)
            .scalar_subquery()
        )
        return select(newest_id.label("run_id")).where(names.c.value.is_not(None))

    def slots_sql(self, run_ids: list[int]) -> Select[Any]:
        """Those slot rows with their jobs, by primary key (a separate statement, so no
        planner is tempted to hash-join the whole runs table)."""
        runs, job = self.runs, self.job
        return (
            select(
                runs.c.job_name,
                runs.c.scheduled_for,
                runs.c.outcome,
                runs.c.enqueued_at,
                runs.c.job_id,
                job.c.state.label("job_state"),
                job.c.started_at,
                job.c.finished_at,
            )
            .select_from(runs.outerjoin(job, job.c.id == runs.c.job_id))
            .where(runs.c.id.in_(run_ids))
            .order_by(runs.c.job_name)
        )

    # ------------------------------------------------------------------ running them
    def run(self, since: datetime, now: datetime, *, slots: bool = True) -> QueueStatus:
        with self.store.transaction(readonly=True) as conn:
            kinds: dict[str, dict[str, Any]] = {}
            self._read_live(conn, now, kinds)
            self._read_durations(conn, since, kinds)
            self._read_last(conn, kinds)
            slot_rows = self._read_slots(conn) if slots else []
        return QueueStatus(
            now=now,
            since=since,
            kinds=tuple(KindStatus(kind=k, **v) for k, v in sorted(kinds.items())),
            slots=tuple(slot_rows),
        )

    def _read_live(self, conn: Connection, now: datetime, kinds: dict[str, dict[str, Any]]) -> None:
        for r in conn.execute(self.live_sql(now)):
            entry = kinds.setdefault(r.kind, {})
            n = int(r.n)
            if r.state == "open":
                entry["ready"] = int(r.ready or 0)
                entry["scheduled"] = n - int(r.ready or 0)
                entry["oldest_ready_at"] = _utc(r.oldest_ready)
            else:
                entry[r.state] = n

    def _read_durations(
        self, conn: Connection, since: datetime, kinds: dict[str, dict[str, Any]]
    ) -> None:
        rows = conn.execute(self.durations_sql(since)).all()
        if self.store.family == "postgresql":
            for r in rows:
                kinds.setdefault(r.kind, {}).update(
                    done=int(r.n),
                    duration_p50=_float(r.p0),
                    duration_p95=_float(r.p1),
                    duration_max=_float(r.max),
                )
            return
        by_kind: dict[str, tuple[int, dict[int, float]]] = {}
        for r in rows:
            n, ranks = by_kind.setdefault(r.kind, (int(r.n), {}))
            ranks[int(r.rn)] = float(r.d)
        for kind, (n, ranks) in by_kind.items():
            kinds.setdefault(kind, {}).update(
                done=n,
                duration_p50=interpolate(ranks, n, PERCENTILES[0]),
                duration_p95=interpolate(ranks, n, PERCENTILES[1]),
                duration_max=ranks[n],
            )

    def _read_last(self, conn: Connection, kinds: dict[str, dict[str, Any]]) -> None:
        for r in conn.execute(self.last_sql()):
            entry = kinds.setdefault(r.kind, {})
            entry["last_success"] = _utc(r.last_success)
            entry["last_failure"] = _utc(r.last_failure)

    def _read_slots(self, conn: Connection) -> Iterable[SlotStatus]:
        ids = [int(i) for i in conn.execute(self.newest_slots_sql()).scalars() if i is not None]
        if not ids:
            return []
        return [
            SlotStatus(
                job_name=r.job_name,
                slot=_utc(r.scheduled_for),  # type: ignore[arg-type]
                outcome=r.outcome,
                enqueued_at=_utc(r.enqueued_at),  # type: ignore[arg-type]
                job_id=int(r.job_id) if r.job_id is not None else None,
                job_state=r.job_state,
                started_at=_utc(r.started_at),
                finished_at=_utc(r.finished_at),
            )
            for r in conn.execute(self.slots_sql(ids))
        ]

    # ------------------------------------------------------------------ dialect pieces
    def _seconds(self, start: Any, end: Any) -> ColumnElement[float]:
        """``end - start`` in seconds (with microseconds where the dialect keeps them)."""
        family = self.store.family
        if family == "postgresql":
            return cast(func.extract("epoch", end - start), Float)
        if family == "mysql":
            micros = func.timestampdiff(literal_column("MICROSECOND"), start, end)
            return cast(micros, Float) / 1_000_000.0

        # SQLite stores 'YYYY-MM-DD HH:MM:SS.ffffff': whole seconds from strftime('%s'), the
        # fraction from the text (julianday() would round to about 50 microseconds).
        def whole(t: Any) -> Any:
            return cast(func.strftime("%s", t), Integer)

        def frac(t: Any) -> Any:
            return cast(func.substr(t, 20), Float)

        return (whole(end) - whole(start)) + (frac(end) - frac(start))

    @staticmethod
    def _distinct(table: Any, column: Any, name: str) -> Any:
        """Distinct values of an indexed column by hopping through the index (loose scan):
        one probe per value instead of reading every row."""
        hop = table.alias(f"{name}_hop")
        seed = select(func.min(column).label("value")).cte(name, recursive=True)
        step = select(
            select(func.min(hop.c[column.name]))
            .where(hop.c[column.name] > seed.c.value)
            .scalar_subquery()
            .label("value")
        ).where(seed.c.value.is_not(None))
        return seed.union_all(step)


def interpolate(ranks: dict[int, float], n: int, p: float) -> float | None:
    """``percentile_cont(p)`` from the values at 1-based ranks floor(h)+1 and ceil(h)+1,
    h = p * (n - 1), in the same integer arithmetic as the SQL that picked the ranks."""
    if n <= 0:
        return None
    num = round(p * 100)
    lo = (num * (n - 1)) // 100 + 1
    hi = (num * (n - 1) + 99) // 100 + 1
    if lo not in ranks or hi not in ranks:
        return None
    frac = (num * (n - 1) % 100) / 100
    return ranks[lo] + frac * (ranks[hi] - ranks[lo])


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
