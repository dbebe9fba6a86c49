"""Exact ``percentile_cont`` where the database has none, without ranking every row.

Ranking a whole window with ``row_number()`` sorts every run in it inside the database:
1.2 s for the 143k runs of a day on MariaDB, most of ``status``. Two cheaper passes give the
same values (MySQL/MariaDB; SQLite where it has ``ln()``; PostgreSQL has ``percentile_cont``):

1. **histogram**: per kind, log-spaced buckets of the run time in whole ticks (microseconds
   on MySQL/MariaDB, milliseconds on SQLite: the precision ``seconds_between`` has), each
   with its count, min and max: one row per occupied bucket, one pass over the window (read
   inside the covering ``job_attempts`` index, schema step 6).
2. **the needed buckets**: the counts say which bucket holds each rank ``interpolate``
   needs, and where inside it. A bucket whose min equals its max, or a rank at its first or
   last row, answers at once; the rows of the other buckets (a few percent of the window)
   come back and are sorted here, which on MariaDB costs less than its window functions
   even for a whole window.

Buckets are ranges of the run time when the bucket function is monotone; pass 1's min and
max show whether they are (a kind whose buckets overlap is fetched whole: run times below
zero, which share the bucket of their absolute value, make them overlap). Pass 2 selects rows
by the same bucket expression, so it reads exactly the rows pass 1 counted, in the same
snapshot (``Store.one_snapshot``: MySQL/MariaDB read one per statement otherwise); a bucket that
still came back with another count has its rank read from what came back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, literal_column, or_, select, tuple_

PERCENTILES = (0.5, 0.95)
#: Per kind: (runs done, p50, p95, max) of the window.
Durations = dict[str, tuple[int, float | None, float | None, float | None]]
#: Buckets per factor e of run time (a bucket spans 1 %): pass 2 reads a few hundred rows
#: per needed rank on a smooth distribution, pass 1 returns a few hundred rows per kind.
BUCKETS_PER_E = 100


def needed_ranks(n: int, p: float) -> tuple[int, int]:
    """The 1-based ranks floor(h)+1 and ceil(h)+1, h = p * (n - 1), whose values
    ``percentile_cont(p)`` interpolates (integer arithmetic, p as a fraction num/100)."""
    num = round(p * 100)
    return (num * (n - 1)) // 100 + 1, (num * (n - 1) + 99) // 100 + 1


def interpolate(ranks: dict[int, float], n: int, p: float) -> float | None:
    """``percentile_cont(p)`` from the values at the ranks ``needed_ranks`` names."""
    if n <= 0:
        return None
    lo, hi = needed_ranks(n, p)
    if lo not in ranks or hi not in ranks:
        return None
    frac = (round(p * 100) * (n - 1) % 100) / 100
    return ranks[lo] + frac * (ranks[hi] - ranks[lo])


@dataclass
class _Bucket:
    #: The bucket expression's value.
    key: Any
    count: int
    low: int
    high: int
    #: Rows of the kind below this bucket.
    before: int = 0


@dataclass
class _Kind:
    buckets: list[_Bucket] = field(default_factory=list)
    #: rank -> ticks, as found so far.
    found: dict[int, int] = field(default_factory=dict)
    #: rank -> the bucket pass 2 must read for it.
    missing: dict[int, _Bucket] = field(default_factory=dict)
    #: Pass 2 reads the whole kind (its buckets are not ranges).
    whole: bool = False

    @property
    def n(self) -> int:
        return sum(b.count for b in self.buckets)

    def place(self) -> None:
        """Answer what pass 1 answers; keep the rest (and their buckets) for pass 2."""
        self.buckets.sort(key=lambda b: b.low)
        seen = 0
        for b in self.buckets:
            b.before, seen = seen, seen + b.count
        n = seen
        ranges = all(a.high < b.low for a, b in zip(self.buckets, self.buckets[1:], strict=False))
        self.whole = not ranges
        for rank in {n, *(r for p in PERCENTILES for r in needed_ranks(n, p))}:
            b = next(b for b in self.buckets if b.before < rank <= b.before + b.count)
            if self.whole:
                self.missing[rank] = b
            elif b.low == b.high or rank == b.before + 1:
                self.found[rank] = b.low
            elif rank == b.before + b.count:
                self.found[rank] = b.high
            else:
                self.missing[rank] = b

    def fill(self, rows: dict[Any, list[int]]) -> None:
        """The missing ranks from pass 2's rows (ticks by bucket key; all under None for a
        kind read whole)."""
        if self.whole:
            ordered = sorted(t for ticks in rows.values() for t in ticks)
            for rank in self.missing:
                self.found[rank] = ordered[min(rank, len(ordered)) - 1]
            return
        for rank, b in self.missing.items():
            ordered = sorted(rows.get(b.key, [b.low]))
            self.found[rank] = ordered[min(rank - b.before, len(ordered)) - 1]


class ExactPercentiles:
    """``percentile_cont`` per kind over one window, in ticks (``per_second`` a second).

    ``table``: the table read (``kind`` and the window's columns); ``window``: its
    conditions; ``ticks``: the run time as an exact integer expression."""

    def __init__(
        self,
        table: Any,
        window: Sequence[ColumnElement[bool]],
        ticks: ColumnElement[Any],
        per_second: int,
    ) -> None:
        self.table = table
        self.window = list(window)
        self.ticks = ticks
        self.per_second = per_second

    def bucket(self) -> ColumnElement[Any]:
        magnitude = func.abs(self.ticks) + 1
        return func.floor(func.ln(magnitude) * literal_column(str(BUCKETS_PER_E)))

    def histogram_sql(self) -> Any:
        kind, bucket = self.table.c.kind, self.bucket()
        return (
            select(
                kind,
                bucket.label("b"),
                func.count().label("n"),
                func.min(self.ticks).label("low"),
                func.max(self.ticks).label("high"),
            )
            .where(*self.window)
            .group_by(kind, bucket)
        )

    def rows_sql(self, kinds: dict[str, _Kind]) -> Any:
        """Pass 2: the rows of the buckets still needed (of the whole kind where its
        buckets are not ranges)."""
        kind, bucket = self.table.c.kind, self.bucket()
        pairs = sorted(
            {(name, b.key) for name, k in kinds.items() if not k.whole for b in k.missing.values()}
        )
        whole = sorted(name for name, k in kinds.items() if k.whole)
        inside = []
        if pairs:
            inside.append(tuple_(kind, bucket).in_(pairs))
        if whole:
            inside.append(kind.in_(whole))
        return select(kind, bucket.label("b"), self.ticks.label("ticks")).where(
            *self.window, or_(*inside)
        )

    def read(self, conn: Connection) -> Durations:
        kinds: dict[str, _Kind] = {}
        for r in conn.execute(self.histogram_sql()):
            b = _Bucket(r.b, int(r.n), int(r.low), int(r.high))
            kinds.setdefault(r.kind, _Kind()).buckets.append(b)
        for k in kinds.values():
            k.place()
        pending = {name: k for name, k in kinds.items() if k.missing}
        if pending:
            rows: dict[str, dict[Any, list[int]]] = {name: {} for name in pending}
            for r in conn.execute(self.rows_sql(pending)):
                key = None if pending[r.kind].whole else r.b
                rows[r.kind].setdefault(key, []).append(int(r.ticks))
            for name, k in pending.items():
                k.fill(rows[name])
        return {name: self._answer(k) for name, k in kinds.items()}

    def _answer(self, k: _Kind) -> tuple[int, float | None, float | None, float | None]:
        n = k.n
        seconds = {rank: ticks / self.per_second for rank, ticks in k.found.items()}
        return (
            n,
            interpolate(seconds, n, PERCENTILES[0]),
            interpolate(seconds, n, PERCENTILES[1]),
            seconds.get(n),
        )
