"""The overview over a long window (more than an hour) from ``job_trend_periods`` plus the
live rest: the rolled periods inside the window, and the periods not rolled yet (and the
window's unaligned start, for the kinds table) computed from ``job_attempts`` by the roll-up's
own statements (``rollup.py``), added up in Python per kind and chart bucket.

What differs from the exact reads (``trends.py``, ``status.py``): run-time percentiles come
from histograms (within a factor √1.25 ≈ 1.12, ``histogram.py``; the page marks them "≈"); the
kinds table's "done" counts successful runs (``job_attempts``), not job rows (they differ only
for a job done, retried by an operator and done again); and a run written more than
``rollup.MARGIN`` after it ended is missing from a period rolled before it came. Without any
rolled period (no worker has rolled yet, or a database at schema step 4) the exact reads serve.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, and_, or_, select

from migrate_cron.store.base import aware
from migrate_cron.store.histogram import merged, percentile
from migrate_cron.store.models import QueueStatus, RuntimePoint, TrendGrid, Trends
from migrate_cron.store.percentiles import PERCENTILES, Durations
from migrate_cron.store.rollup import (
    FINEST,
    MARK,
    SPANS,
    Period,
    PeriodQueries,
    Periods,
    RollupOps,
    cover,
    number_of,
)
from migrate_cron.store.status import StatusOps, StatusQueries
from migrate_cron.store.trends import TrendOps, TrendQueries, trend_grid

#: Windows up to this long are read exactly from the history.
EXACT_UP_TO = 3600.0


class RolledReads:
    """Reads periods of a window for one store, in the caller's transaction."""

    def __init__(self, store: RollupOps, conn: Connection) -> None:
        self.store = store
        self.conn = conn
        self.marks = store._rolled_levels(conn)

    def any_rolled(self) -> bool:
        return bool(self.marks)

    def periods(
        self, a: datetime, b: datetime, step: int, spans: list[int], *, ready: bool
    ) -> Periods:
        """Per (kind, bucket number of ``step``) what happened in [a, b): each span of
        ``spans`` divides ``step``, so a rolled period lies in one bucket."""
        levels = [(s, *self.marks[s]) for s in SPANS if s in spans and s in self.marks]
        pieces = cover(a, b, levels)
        out: Periods = {}
        rolled = [(s, x, y) for s, x, y in pieces if s is not None]
        if rolled:
            t = self.store.tables.trend_periods
            which = or_(
                *(and_(t.c.span == s, t.c.period_start >= x, t.c.period_start < y)
                  for s, x, y in rolled)
            )  # fmt: skip
            for r in self.conn.execute(select(t).where(which, t.c.kind != MARK)):
                number = number_of(aware(r.period_start), step)
                out.setdefault((r.kind, number), Period()).add_row(r)
        live = PeriodQueries(self.store, step)
        for s, x, y in pieces:
            if s is None:
                live.read(self.conn, x, None if y == b else y, out, running=False, ready=ready)
        return out


def rolled_trends(store: RollupOps, conn: Connection, grid: TrendGrid) -> Trends | None:
    """The three charts of ``grid`` from the periods; None when nothing is rolled yet."""
    reads = RolledReads(store, conn)
    if not reads.any_rolled():
        return None
    spans = [s for s in SPANS if grid.step % s == 0]
    periods = reads.periods(grid.start, grid.now, grid.step, spans, ready=True)
    queries = TrendQueries(store, grid)
    done = [0] * grid.count
    failed = [0] * grid.count
    by_kind: dict[str, dict[int, Period]] = {}
    waits: list[tuple[int, datetime]] = []
    for (kind, number), period in periods.items():
        if period.min_ready is not None:
            waits.append((number, period.min_ready))
        i = queries.index(number)
        if i is None:
            continue
        done[i] += period.done
        failed[i] += period.failed
        if period.done or period.failed:
            by_kind.setdefault(kind, {})[i] = period
    runtime: dict[str, tuple[RuntimePoint | None, ...]] = {}
    for kind, buckets in sorted(by_kind.items()):
        series: list[RuntimePoint | None] = [None] * grid.count
        for i, p in buckets.items():
            runs = merged((p.done_hist, p.failed_hist))
            series[i] = RuntimePoint(
                p.done + p.failed,
                percentile(runs, PERCENTILES[0]),
                percentile(runs, PERCENTILES[1]),
            )
        runtime[kind] = tuple(series)
    ages = queries.queue_age(conn, history=False, extra=waits)
    return Trends(grid, tuple(done), tuple(failed), ages, runtime, approximate=True)


def rolled_durations(
    store: RollupOps, conn: Connection, since: datetime, now: datetime
) -> Durations | None:
    """Per kind with successful runs in [since, now): (runs, p50, p95, max), the percentiles
    from the histograms; None when nothing is rolled yet."""
    reads = RolledReads(store, conn)
    if not reads.any_rolled():
        return None
    kinds: dict[str, Period] = {}
    for (kind, _), period in reads.periods(since, now, FINEST, list(SPANS), ready=False).items():
        kinds.setdefault(kind, Period()).add(period)
    out: Durations = {}
    for kind, p in kinds.items():
        if p.done:
            out[kind] = (
                p.done,
                percentile(p.done_hist, PERCENTILES[0], p.done_max),
                percentile(p.done_hist, PERCENTILES[1], p.done_max),
                p.done_max,
            )
    return out


class OverviewOps(StatusOps, TrendOps, RollupOps):
    """``status`` and ``trends`` as the console's overview reads them over a long window."""

    def status(
        self, since: datetime, now: datetime | None = None, *, slots: bool = True,
        rolled: bool = False,
    ) -> QueueStatus:  # fmt: skip
        """``StatusOps.status``; with ``rolled`` (the overview) and a window longer than an
        hour, the done counts and run times come from the rolled periods plus the live rest
        (``approximate`` in the answer). The CLI's ``status`` stays exact."""
        now = now or self.db_now()
        if not rolled or (now - since).total_seconds() <= EXACT_UP_TO:
            return super().status(since, now, slots=slots)

        def durations(conn: Connection) -> Durations | None:
            return rolled_durations(self, conn, since, now)

        return StatusQueries(self).run(since, now, slots=slots, durations=durations)

    def trends(self, window: float, now: datetime | None = None) -> Trends:
        """``TrendOps.trends``; over a window longer than an hour, from the rolled periods
        plus the live rest once any period is rolled (``approximate`` in the answer)."""
        grid = trend_grid(window, now or self.db_now())
        if window > EXACT_UP_TO and grid.step % FINEST == 0:
            with self.transaction(readonly=True) as conn:
                if self._has_attempts(conn) and self._has_console(conn):
                    got = rolled_trends(self, conn, grid)
                    if got is not None:
                        return got
        return super().trends(window, grid.now)
