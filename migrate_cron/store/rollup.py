"""``job_trend_periods``: the attempt history rolled up per kind and closed period, so the
console's long windows (24 h, 7 d, 30 d) read a few thousand rows instead of every run.

**Writing** (``roll_up_trends``): the worker holding the reaper turn rolls, for each span of
``SPANS`` (6 h, 1 h, 10 min), the periods after the last one rolled, oldest first, at most
``max_periods`` ten-minute equivalents (one day) per span and turn, so a first turn on a long
history stays short and later turns catch up. A period is rolled once it ended ``MARGIN``
(15 min) ago: a run whose row is written later than that (a worker that held its outcomes
through an outage, a clock far behind) is missing from the rolled period, though still in
``job_attempts`` and in ``status``. Rows are written by upsert with a marker row of kind ''
per rolled period, so rolling a period twice (two workers in one turn) writes the same rows.
Rows older than ``PRUNE`` are deleted as newer ones come.

Each period holds what the overview needs, counted as the live charts count it: runs done and
failed by ``finished_at``; their run times as histograms (``histogram.py``, done and failed
apart: the kinds table shows successful runs, the run-time chart all of them), the sum and
max of the done ones; and the earliest ``ready_at`` of the runs *started* in it, with the jobs
running at roll time (a wait ends when its run starts: the queue-age chart's grouping). Runs
started in a period and finished more than ``HORIZON`` (a day) after it are looked for only
among the running jobs, which is all of them except when a long backlog is rolled late.

**Reading** (``cover``, ``PeriodQueries``; ``rolled.py``): a window is cut into rolled
pieces — the coarsest span that fits, then finer ones at its edges — and live pieces (the
periods not rolled yet, the window's unaligned start), which are computed from
``job_attempts`` by the same statements the roll-up runs, so both add up alike.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Select, delete, func, select

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.base import aware, aware_or_none
from migrate_cron.store.histogram import bucket_sql, decode, encode
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.vocabulary import AttemptOutcome, JobState

#: Period lengths rolled (seconds), coarsest first: each divides the next coarser one and
#: matches a chart's step (30 d → 6 h, 7 d → 1 h, 24 h → 10 min).
SPANS = (21600, 3600, 600)
FINEST = SPANS[-1]
#: A period is rolled once it ended this long ago (seconds).
MARGIN = 900.0
#: Ten-minute periods (or their equivalent in time for coarser spans) rolled per span and turn.
PER_TURN = 144
#: How far back a first roll-up starts (the longest window, 30 days, and a day to spare).
KEEP = timedelta(days=31)
#: Rolled periods older than this are deleted.
PRUNE = timedelta(days=32)
#: How long after its period a run is looked for (its wait's start) when rolling.
HORIZON = timedelta(days=1)
#: The kind of a period's marker row.
MARK = ""

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def floor_to(at: datetime, span: int) -> datetime:
    return EPOCH + timedelta(seconds=number_of(at, span) * span)


def ceil_to(at: datetime, span: int) -> datetime:
    start = floor_to(at, span)
    return start if start == at else start + timedelta(seconds=span)


def number_of(at: datetime, span: int) -> int:
    return int((at - EPOCH).total_seconds() // span)


@dataclass
class Period:
    """What one kind did over one period, or over several added up."""

    done: int = 0
    failed: int = 0
    done_seconds: float = 0.0
    done_max: float | None = None
    done_hist: Counter[int] = field(default_factory=Counter)
    failed_hist: Counter[int] = field(default_factory=Counter)
    min_ready: datetime | None = None

    def add_runs(self, done: bool, bucket: int, n: int, seconds: float, top: float | None) -> None:
        if done:
            self.done += n
            self.done_seconds += seconds
            self.done_hist[bucket] += n
            self._top(top)
        else:
            self.failed += n
            self.failed_hist[bucket] += n

    def add_ready(self, at: datetime | None) -> None:
        if at is not None and (self.min_ready is None or at < self.min_ready):
            self.min_ready = at

    def add_row(self, row: Any) -> None:
        """A ``job_trend_periods`` row."""
        self.done += int(row.done)
        self.failed += int(row.failed)
        self.done_seconds += float(row.done_seconds or 0.0)
        self._top(row.done_max)
        self.done_hist.update(decode(row.done_hist))
        self.failed_hist.update(decode(row.failed_hist))
        self.add_ready(aware_or_none(row.min_ready_at))

    def add(self, other: Period) -> None:
        self.done += other.done
        self.failed += other.failed
        self.done_seconds += other.done_seconds
        self._top(other.done_max)
        self.done_hist.update(other.done_hist)
        self.failed_hist.update(other.failed_hist)
        self.add_ready(other.min_ready)

    def _top(self, value: float | None) -> None:
        if value is not None and (self.done_max is None or value > self.done_max):
            self.done_max = float(value)

    def row(self, kind: str, span: int, start: datetime) -> dict[str, Any]:
        return {
            "kind": kind,
            "span": span,
            "period_start": start,
            "done": self.done,
            "failed": self.failed,
            "done_seconds": self.done_seconds if self.done else None,
            "done_max": self.done_max,
            "done_hist": encode(self.done_hist),
            "failed_hist": encode(self.failed_hist),
            "min_ready_at": self.min_ready,
        }


#: Per (kind, period number) what happened.
Periods = dict[tuple[str, int], Period]


class PeriodQueries:
    """The statements that compute periods of ``span`` seconds from the history: the roll-up's
    and the live pieces' of a long window (``rolled.py``)."""

    def __init__(self, store: AttemptOps, span: int) -> None:
        self.store = store
        self.span = span

    def number(self, column: Any) -> Any:
        return self.store.epoch_seconds(column) // self.span

    def runs_sql(self, lo: datetime, hi: datetime | None) -> Select[Any]:
        """Rows (kind, period, outcome, run-time bucket, runs, their seconds, the longest) of
        the runs finished in [lo, hi) — the ``finished_at`` index bounds it."""
        att = self.store.tables.attempts
        cond = [att.c.finished_at >= lo] + ([att.c.finished_at < hi] if hi else [])
        seconds = self.store.seconds_between(att.c.started_at, att.c.finished_at)
        runs = (
            select(
                att.c.kind,
                self.number(att.c.finished_at).label("p"),
                att.c.outcome,
                seconds.label("d"),
            )
            .where(*cond)
            .subquery("runs")
        )
        # The bucket in a subquery of its own: GROUP BY names the column, not the CASE.
        bucketed = select(runs, bucket_sql(runs.c.d).label("h")).subquery("bucketed")
        c = bucketed.c
        return select(
            c.kind,
            c.p,
            c.outcome,
            c.h,
            func.count().label("n"),
            func.sum(c.d).label("s"),
            func.max(c.d).label("top"),
        ).group_by(c.kind, c.p, c.outcome, c.h)

    def ready_sql(self, lo: datetime, hi: datetime | None, *, running: bool) -> Select[Any]:
        """Rows (kind, period, earliest ready_at) of the runs started in [lo, hi) (finished
        within ``HORIZON`` after hi) and, with ``running``, of the running jobs claimed then."""
        att, job = self.store.tables.attempts, self.store.tables.job
        p = self.number(att.c.started_at).label("p")
        cond = [att.c.finished_at >= lo, att.c.started_at >= lo, att.c.ready_at.is_not(None)]
        if hi is not None:
            cond += [att.c.started_at < hi, att.c.finished_at < hi + HORIZON]
        runs = (
            select(att.c.kind, p, func.min(att.c.ready_at, type_=UTCDateTime()).label("r"))
            .where(*cond)
            .group_by(att.c.kind, p)
        )
        if not running:
            return runs
        jp = self.number(job.c.started_at).label("p")
        jcond = [job.c.state == JobState.RUNNING, job.c.started_at >= lo]
        if hi is not None:
            jcond.append(job.c.started_at < hi)
        claimed = (
            select(job.c.kind, jp, func.min(job.c.run_at, type_=UTCDateTime()).label("r"))
            .where(*jcond)
            .group_by(job.c.kind, jp)
        )
        waits = runs.union_all(claimed).subquery("waits")
        return select(waits.c.kind, waits.c.p, waits.c.r)

    def read(
        self, conn: Connection, lo: datetime, hi: datetime | None, into: Periods,
        *, running: bool, ready: bool = True,
    ) -> None:  # fmt: skip
        for r in conn.execute(self.runs_sql(lo, hi)):
            period = into.setdefault((r.kind, int(r.p)), Period())
            done = r.outcome == AttemptOutcome.DONE
            period.add_runs(done, int(r.h), int(r.n), float(r.s or 0.0), _float(r.top))
        if ready:
            for r in conn.execute(self.ready_sql(lo, hi, running=running)):
                if r.p is not None:
                    into.setdefault((r.kind, int(r.p)), Period()).add_ready(aware_or_none(r.r))


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


#: A piece of a window: (span of the rolled periods read, or None for live; from, to).
Piece = tuple[int | None, datetime, datetime]


def cover(a: datetime, b: datetime, levels: list[tuple[int, datetime, datetime]]) -> list[Piece]:
    """[a, b) cut into rolled pieces — for each level (span, first rolled, end of rolled),
    coarsest first, the whole periods it has inside — and live pieces for the rest."""
    if a >= b:
        return []
    if not levels:
        return [(None, a, b)]
    (span, first, end), finer = levels[0], levels[1:]
    x = max(ceil_to(a, span), first)
    y = min(floor_to(b, span), end)
    if x >= y:
        return cover(a, b, finer)
    return [*cover(a, x, finer), (span, x, y), *cover(y, b, finer)]


class RollupOps(AttemptOps):
    """The writer of ``job_trend_periods`` and the marks the readers cut windows by."""

    def _upsert_rows(self, conn: Connection, table: Any, rows: list[dict[str, Any]]) -> None:
        """Insert ``rows``, or overwrite the non-key columns of those whose primary key exists:
        one statement, so writing the same rows twice changes nothing. ``ON CONFLICT DO
        UPDATE`` through the dialect's insert construct (``_conflict_insert``), one cached
        statement executed with every row; MySQL/MariaDB override it."""
        keys = list(table.primary_key.columns)
        stmt = self._conflict_insert(table)
        others = {c.name: stmt.excluded[c.name] for c in table.c if c not in keys}
        conn.execute(stmt.on_conflict_do_update(index_elements=keys, set_=others), rows)

    def roll_up_trends(
        self, now: datetime | None = None, *, margin: float = MARGIN, max_periods: int = PER_TURN
    ) -> int:
        """Roll the closed periods not rolled yet (see the module docstring); how many
        periods were rolled (0: nothing was due, or the database has no such table)."""
        if not self.attempts_enabled() or not self.console_enabled():
            return 0
        now = now or self.db_now()
        rolled = 0
        for span in SPANS:
            with self.transaction() as conn:
                limit = max(1, max_periods * FINEST // span)
                rolled += self._roll(conn, span, now, margin, limit)
        return rolled

    def _roll(self, conn: Connection, span: int, now: datetime, margin: float, limit: int) -> int:
        t = self.tables.trend_periods
        last = conn.execute(
            select(func.max(t.c.period_start)).where(t.c.kind == MARK, t.c.span == span)
        ).scalar()
        step = timedelta(seconds=span)
        start = floor_to(now - KEEP, span) if last is None else aware(last) + step
        end = min(start + limit * step, floor_to(now - timedelta(seconds=margin), span))
        if end <= start:
            return 0
        conn.execute(delete(t).where(t.c.span == span, t.c.period_start < now - PRUNE))
        periods: Periods = {}
        PeriodQueries(self, span).read(conn, start, end, periods, running=True)
        count = number_of(end, span) - number_of(start, span)
        rows = [p.row(kind, span, EPOCH + n * step) for (kind, n), p in sorted(periods.items())]
        rows += [Period().row(MARK, span, start + i * step) for i in range(count)]
        for i in range(0, len(rows), 500):
            self._upsert_rows(conn, t, rows[i : i + 500])
        return count

    def _rolled_levels(self, conn: Connection) -> dict[int, tuple[datetime, datetime]]:
        """Per span: (the first rolled period's start, the end of the last one)."""
        t = self.tables.trend_periods
        out: dict[int, tuple[datetime, datetime]] = {}
        if not self._has_console(conn):
            return out
        rows = conn.execute(
            select(t.c.span, func.min(t.c.period_start), func.max(t.c.period_start))
            .where(t.c.kind == MARK)
            .group_by(t.c.span)
        )
        for span, first, last in rows:
            if first is not None and int(span) in SPANS:
                out[int(span)] = (aware(first), aware(last) + timedelta(seconds=int(span)))
        return out
