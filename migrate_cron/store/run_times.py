"""Status's run times and done counts over its window (``finished_at >= since``).

With the attempts history: the job rows done in the window are only counted, inside the
``(kind, state, finished_at)`` index; the percentiles come from the runs themselves
(successful ``job_attempts`` rows, read inside their covering index, schema step 6), and from
the job rows' claim → write times only for kinds the history lacks in the window (jobs done
before it existed). Without it, the job rows give both.

Percentiles are ``percentile_cont``'s linear interpolation between ranks, the same on every
backend: PostgreSQL's own; a histogram and the buckets holding the needed ranks where that
is cheaper (``percentiles.py``: MySQL/MariaDB, SQLite with ``ln()``); else window functions
rank the rows and only those at the needed ranks come back.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, func, literal, or_, select

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.percentiles import (
    PERCENTILES,
    Durations,
    ExactPercentiles,
    interpolate,
    needed_ranks,
)
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.vocabulary import JobState


class RunTimes:
    """The window's statements for one store (tables, prefix, dialect)."""

    def __init__(self, store: AttemptOps) -> None:
        self.store = store

    def window(
        self, since: datetime, *, runs: bool, kinds: Iterable[str] | None = None
    ) -> tuple[Any, list[ColumnElement[bool]]]:
        """The table and conditions of the runs done in the window: ``runs``, successful
        runs from the attempts history; else the job rows (claim → outcome written).
        ``kinds``: only those."""
        if runs:
            job = self.store.tables.attempts
            window = [job.c.outcome == JobState.DONE]
        else:
            job = self.store.tables.job
            window = [job.c.state == JobState.DONE, job.c.started_at.is_not(None)]
        window.append(job.c.finished_at >= literal(since, UTCDateTime()))
        if kinds is not None:
            window.append(job.c.kind.in_(sorted(kinds)))
        return job, window

    def done_sql(self, since: datetime, kinds: Iterable[str]) -> Select[Any]:
        """Job rows done in the window per kind, counted inside the ``(kind, state,
        finished_at)`` index (no row read: done rows always have their ``started_at``)."""
        job = self.store.tables.job
        stmt = (
            select(job.c.kind, func.count().label("n"))
            .where(
                job.c.kind.in_(sorted(kinds)),
                job.c.state == JobState.DONE,
                job.c.finished_at >= literal(since, UTCDateTime()),
            )
            .group_by(job.c.kind)
        )
        return self.store.through_index(stmt, job, f"{self.store.tables.prefix}job_kind_state_idx")

    def durations_sql(
        self, since: datetime, *, runs: bool = False, kinds: Iterable[str] | None = None
    ) -> Select[Any]:
        """PostgreSQL: one aggregate row per kind. Elsewhere: the rows at the needed ranks.

        ``runs``: the runs' own times from the attempts history (successful runs finished in
        the window); else claim → outcome written from the job rows, which also counts the
        jobs done in the window (and is all a database without the history has)."""
        job, window = self.window(since, runs=runs, kinds=kinds)
        seconds = self.store.seconds_between(job.c.started_at, job.c.finished_at)
        if self.store.supports_percentile_cont:
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
                .where(*window)
                .group_by(job.c.kind)
            )
        base = select(job.c.kind, seconds.label("d")).where(*window).subquery("w")
        ranked = select(
            base.c.kind,
            base.c.d,
            func.row_number().over(partition_by=base.c.kind, order_by=base.c.d).label("rn"),
            func.count().over(partition_by=base.c.kind).label("n"),
        ).subquery("r")
        wanted = [ranked.c.rn == ranked.c.n]
        for p in PERCENTILES:
            # ``needed_ranks`` in SQL: the same integer arithmetic, so every dialect agrees.
            lo, hi = needed_ranks(ranked.c.n, p)  # type: ignore[arg-type]
            wanted += [ranked.c.rn == lo, ranked.c.rn == hi]
        return select(ranked.c.kind, ranked.c.d, ranked.c.rn, ranked.c.n).where(or_(*wanted))

    def read(
        self, conn: Connection, since: datetime, *, history: bool, counted: set[str]
    ) -> dict[str, dict[str, Any]]:
        """Per kind, what status shows of the window: ``done`` (job rows) and the run-time
        percentiles, from the runs themselves where the attempts history has them (claim →
        write otherwise: jobs done before the history existed). ``counted``: the kinds with
        a done row at all (``last`` found them), the only ones whose rows are counted."""
        found: dict[str, dict[str, Any]] = {}
        if not history:
            for kind, (n, p50, p95, top) in self.durations(conn, since, runs=False).items():
                found[kind] = dict(done=n, duration_p50=p50, duration_p95=p95, duration_max=top)
            return found
        done: dict[str, int] = {}
        if counted:
            done = {r.kind: int(r.n) for r in conn.execute(self.done_sql(since, counted))}
        for kind, n in done.items():
            found[kind] = {"done": n}
        timed = self.durations(conn, since, runs=True)
        lacking = [kind for kind in done if kind not in timed]
        if lacking:
            timed.update(self.durations(conn, since, runs=False, kinds=lacking))
        for kind, (_, p50, p95, top) in timed.items():
            entry = found.setdefault(kind, {})
            entry.update(duration_p50=p50, duration_p95=p95, duration_max=top)
        return found

    def durations(
        self, conn: Connection, since: datetime, *, runs: bool, kinds: list[str] | None = None
    ) -> Durations:
        """Per kind: (n, p50, p95, max)."""
        if self.store.histogram_percentiles(conn):
            job, window = self.window(since, runs=runs, kinds=kinds)
            ticks = self.store.duration_ticks(job.c.started_at, job.c.finished_at)
            return ExactPercentiles(job, window, *ticks).read(conn)
        rows = conn.execute(self.durations_sql(since, runs=runs, kinds=kinds)).all()
        if self.store.supports_percentile_cont:
            return {r.kind: (int(r.n), _float(r.p0), _float(r.p1), _float(r.max)) for r in rows}
        by_kind: dict[str, tuple[int, dict[int, float]]] = {}
        for r in rows:
            _, ranks = by_kind.setdefault(r.kind, (int(r.n), {}))
            ranks[int(r.rn)] = float(r.d)
        return {
            kind: (
                n,
                interpolate(ranks, n, PERCENTILES[0]),
                interpolate(ranks, n, PERCENTILES[1]),
                ranks[n],
            )
            for kind, (n, ranks) in by_kind.items()
        }


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
