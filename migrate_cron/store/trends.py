"""The console's trend charts: what the queue did over a window, bucket by bucket, from history.

One read statement per chart, each bounded by an index on the window rather than by the size
of the tables; the bucket of a timestamp is ``floor(epoch seconds / step)``, spelled by each
database's Store (``epoch_seconds``, in ``dialects/*_store.py``), so the grouping happens in
the database and only one row per bucket (and outcome or kind) comes back.

- **throughput**: attempts done and failed per bucket of ``finished_at`` (the history's
  ``finished_at`` index bounds the window). Attempts, not jobs: a run that failed and then
  succeeded on retry shows as one failure and one success, which is what an operator looking
  for a failure burst wants to see.
- **queue age**: the age of the oldest ready job at each bucket's end, exact from history
  (see ``queue_age_trend``).
- **run time**: p50/p95 of the attempts' own run time (``finished_at - started_at``) per kind
  and bucket of ``finished_at``, with the ``status`` definition (``percentile_cont``, linear
  interpolation between ranks): PostgreSQL computes it natively; elsewhere window functions
  partitioned by kind and bucket rank the rows in the database and only the rows at the
  needed ranks come back (``status.py``'s approach).

Without the history table every chart but the queue's present is empty; a database without
schema step 5 has no ``ready_at``, so the queue age reads only the jobs still waiting or running.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, func, literal, or_, select

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.base import aware_or_none
from migrate_cron.store.models import RuntimePoint, TrendGrid, Trends
from migrate_cron.store.percentiles import PERCENTILES, interpolate
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.vocabulary import AttemptOutcome, JobState

#: Bucket lengths a chart may use (seconds): clock-aligned minutes, hours, days.
STEPS = (60, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400)
#: At most this many buckets per chart: 1h → 1 min, 24h → 10 min, 7d → 1 h, 30d → 6 h.
MAX_BUCKETS = 180

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def trend_grid(window: float, now: datetime) -> TrendGrid:
    """The buckets covering the ``window`` seconds up to ``now``: the shortest step in
    ``STEPS`` that needs no more than ``MAX_BUCKETS`` buckets (the longest one beyond)."""
    step = next((s for s in STEPS if window / s <= MAX_BUCKETS), STEPS[-1])
    first = _bucket_number(now - timedelta(seconds=window), step)
    last = _bucket_number(now, step)
    return TrendGrid(EPOCH + timedelta(seconds=first * step), step, last - first + 1, now)


def _bucket_number(at: datetime, step: int) -> int:
    return int((at - EPOCH).total_seconds() // step)


class TrendQueries:
    """Builds the three statements for one store and grid, and turns their rows into series."""

    def __init__(self, store: AttemptOps, grid: TrendGrid) -> None:
        self.store = store
        self.grid = grid
        self.first = _bucket_number(grid.start, grid.step)
        self.since = literal(grid.start, UTCDateTime())

    def bucket(self, column: Any) -> ColumnElement[Any]:
        return self.store.epoch_seconds(column) // self.grid.step

    def index(self, number: Any) -> int | None:
        """The position in the grid of a bucket number the database returned."""
        i = int(number) - self.first
        return i if 0 <= i < self.grid.count else None

    # ------------------------------------------------------------------ throughput
    def throughput_sql(self) -> Select[Any]:
        att = self.store.tables.attempts
        b = self.bucket(att.c.finished_at).label("b")
        return (
            select(b, att.c.outcome, func.count().label("n"))
            .where(att.c.finished_at >= self.since)
            .group_by(b, att.c.outcome)
        )

    def throughput(self, conn: Connection) -> tuple[tuple[int, ...], tuple[int, ...]]:
        done = [0] * self.grid.count
        failed = [0] * self.grid.count
        for r in conn.execute(self.throughput_sql()):
            i = self.index(r.b)
            if i is None:
                continue
            (done if r.outcome == AttemptOutcome.DONE else failed)[i] += int(r.n)
        return tuple(done), tuple(failed)

    # ------------------------------------------------------------------ queue age
    def queue_age_sql(self, *, history: bool) -> Select[Any]:
        """Rows (bucket of the wait's end, earliest start of a wait ending in it): finished
        attempts by the bucket they started in, running jobs by the bucket they were claimed
        in, and the jobs still waiting under a bucket after the last (they wait until now)."""
        job, att = self.store.tables.job, self.store.tables.attempts
        now = literal(self.grid.now, UTCDateTime())
        running_b = self.bucket(job.c.started_at).label("b")
        parts: list[Any] = [
            select(running_b, func.min(job.c.run_at, type_=UTCDateTime()).label("r"))
            .where(job.c.state == JobState.RUNNING, job.c.started_at >= self.since)
            .group_by(running_b),
            select(
                literal(self.first + self.grid.count).label("b"),
                func.min(job.c.run_at, type_=UTCDateTime()).label("r"),
            ).where(job.c.state == JobState.OPEN, job.c.run_at <= now),
        ]
        if history:
            b = self.bucket(att.c.started_at).label("b")
            parts.insert(
                0,
                select(b, func.min(att.c.ready_at, type_=UTCDateTime()).label("r"))
                .where(
                    att.c.finished_at >= self.since,
                    att.c.started_at >= self.since,
                    att.c.ready_at.is_not(None),
                )
                .group_by(b),
            )
        union = parts[0].union_all(*parts[1:]).subquery("waits")
        return select(union.c.b, union.c.r)

    def queue_age(
        self, conn: Connection, *, history: bool, extra: Iterable[tuple[int, datetime]] = ()
    ) -> tuple[float, ...]:
        """Each bucket's earliest wait start, then the suffix minimum from the last bucket back:
        a wait that ended in bucket j (or is still going on, "after the last") covers every
        earlier bucket end it had begun by, so the oldest wait at end i is the earliest start
        among the buckets after i — if it had begun by then (else nothing waited: age 0).
        ``extra``: more (bucket number, earliest wait start) pairs (rolled periods)."""
        count = self.grid.count
        earliest: list[datetime | None] = [None] * (count + 1)
        rows = (
            (r.b, aware_or_none(r.r)) for r in conn.execute(self.queue_age_sql(history=history))
        )
        for number, start in itertools.chain(rows, extra):
            if start is None or number is None:
                continue
            i = int(number) - self.first
            if i < 0:
                continue
            i = min(i, count)
            if earliest[i] is None or start < earliest[i]:  # type: ignore[operator]
                earliest[i] = start
        ages = [0.0] * count
        oldest: datetime | None = earliest[count]
        for i in range(count - 1, -1, -1):
            end = self.grid.bucket_end(i)
            if oldest is not None and oldest <= end:
                ages[i] = (end - oldest).total_seconds()
            later = earliest[i]
            if later is not None and (oldest is None or later < oldest):
                oldest = later
        return tuple(ages)

    # ------------------------------------------------------------------ run time
    def runtime_sql(self) -> Select[Any]:
        """PostgreSQL: one aggregate row per kind and bucket. Elsewhere: the rows at the
        needed ranks of each (kind, bucket) partition."""
        att = self.store.tables.attempts
        seconds = self.store.seconds_between(att.c.started_at, att.c.finished_at)
        b = self.bucket(att.c.finished_at).label("b")
        window = att.c.finished_at >= self.since
        if self.store.supports_percentile_cont:
            return (
                select(
                    att.c.kind,
                    b,
                    func.count().label("n"),
                    *(
                        func.percentile_cont(p).within_group(seconds).label(f"p{i}")
                        for i, p in enumerate(PERCENTILES)
                    ),
                )
                .where(window)
                .group_by(att.c.kind, b)
            )
        base = select(att.c.kind, b, seconds.label("d")).where(window).subquery("w")
        part = (base.c.kind, base.c.b)
        ranked = select(
            base.c.kind,
            base.c.b,
            base.c.d,
            func.row_number().over(partition_by=part, order_by=base.c.d).label("rn"),
            func.count().over(partition_by=part).label("n"),
        ).subquery("r")
        wanted = []
        for p in PERCENTILES:
            num = round(p * 100)  # the ranks ``interpolate`` reads, as in status.py
            wanted.append(ranked.c.rn == (num * (ranked.c.n - 1)) // 100 + 1)
            wanted.append(ranked.c.rn == (num * (ranked.c.n - 1) + 99) // 100 + 1)
        return select(ranked.c.kind, ranked.c.b, ranked.c.d, ranked.c.rn, ranked.c.n).where(
            or_(*wanted)
        )

    def runtime(self, conn: Connection) -> dict[str, tuple[RuntimePoint | None, ...]]:
        rows = conn.execute(self.runtime_sql()).all()
        points: dict[str, list[RuntimePoint | None]] = {}
        if self.store.supports_percentile_cont:
            for r in rows:
                i = self.index(r.b)
                if i is None:
                    continue
                series = points.setdefault(r.kind, [None] * self.grid.count)
                series[i] = RuntimePoint(int(r.n), _float(r.p0), _float(r.p1))
        else:
            ranks: dict[tuple[str, int], tuple[int, dict[int, float]]] = {}
            for r in rows:
                i = self.index(r.b)
                if i is None:
                    continue
                _, seen = ranks.setdefault((r.kind, i), (int(r.n), {}))
                seen[int(r.rn)] = float(r.d)
            for (kind, i), (n, seen) in ranks.items():
                series = points.setdefault(kind, [None] * self.grid.count)
                series[i] = RuntimePoint(
                    n, interpolate(seen, n, PERCENTILES[0]), interpolate(seen, n, PERCENTILES[1])
                )
        return {kind: tuple(series) for kind, series in sorted(points.items())}


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _empty(grid: TrendGrid) -> tuple[int, ...]:
    return (0,) * grid.count


class TrendOps(AttemptOps):
    """The console's trend charts (``web`` overview), each a named operation on a grid."""

    def throughput_trend(self, grid: TrendGrid) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Attempts (done, failed) finished in each bucket."""
        if not self.attempts_enabled():
            return _empty(grid), _empty(grid)
        with self.transaction(readonly=True) as conn:
            return TrendQueries(self, grid).throughput(conn)

    def queue_age_trend(self, grid: TrendGrid) -> tuple[float, ...]:
        """The age in seconds of the oldest ready job at each bucket's end, exact from history.

        A job is ready and waiting from the moment it became due (``ready_at``: its
        ``run_at`` when claimed) until a worker started it (``started_at``), bounds included.
        At a bucket end t, the oldest ready job is the waiting one with the earliest start,
        so the age is t − min{ready_at : ready_at ≤ t ≤ started_at}. Grouping the waits by the
        bucket of their end and keeping each bucket's min(ready_at) loses nothing: a wait
        ending in bucket j covers only ends of buckets before j, and for each such end the
        bucket's earliest start is the one that counts. Walking back from the last bucket with
        the running minimum of those starts gives every end's answer (``queue_age``).

        The waits: finished attempts (``job_attempts``: ready_at → started_at, rows written
        before schema step 5 have no ready_at and are left out), running jobs (run_at → the
        claim's started_at) and open jobs already due (run_at → now, past every bucket end).
        A wait that began before the window still counts at the ends it covers inside it."""
        with self.transaction(readonly=True) as conn:
            history = self._has_attempts(conn) and self._has_console(conn)
            return TrendQueries(self, grid).queue_age(conn, history=history)

    def runtime_trend(self, grid: TrendGrid) -> dict[str, tuple[RuntimePoint | None, ...]]:
        """Per kind, the run time p50/p95 of the attempts finished in each bucket (None for a
        bucket where the kind finished nothing)."""
        if not self.attempts_enabled():
            return {}
        with self.transaction(readonly=True) as conn:
            return TrendQueries(self, grid).runtime(conn)

    def trends(self, window: float, now: datetime | None = None) -> Trends:
        """The three charts over the ``window`` seconds up to ``now`` (the database's clock by
        default), read in one transaction: one statement per chart."""
        grid = trend_grid(window, now or self.db_now())
        queries = TrendQueries(self, grid)
        with self.transaction(readonly=True) as conn:
            attempts = self._has_attempts(conn)
            history = attempts and self._has_console(conn)
            done, failed = queries.throughput(conn) if attempts else (_empty(grid), _empty(grid))
            ages = queries.queue_age(conn, history=history)
            runtime = queries.runtime(conn) if attempts else {}
        return Trends(grid, done, failed, ages, runtime)
