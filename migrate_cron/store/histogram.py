"""Run times as histograms of fixed log-spaced buckets, so periods can be added up.

Percentiles of a long window cannot be summed from per-period percentiles; counts per bucket
can. Bucket 0 holds runs under ``FIRST`` seconds, bucket ``i`` (1 … ``EDGES``) the runs in
[``FIRST``·``RATIO``^(i−1), ``FIRST``·``RATIO``^i), the last one everything from
``FIRST``·``RATIO``^``EDGES`` (about ten days) up. The database computes a run's bucket
(``bucket_sql``: a CASE over the edges, the same on every backend), so a roll-up brings back
one row per kind, period and bucket, never one per run.

Resolution: a percentile read from a histogram (``percentile``) takes each rank's value as
its bucket's geometric middle, so between 10 ms and ten days it is within a factor
√``RATIO`` ≈ 1.12 of the exact ``percentile_cont`` (the interpolation between two ranks
keeps that bound); under 10 ms it is off by at most 5 ms. The stored text is
``bucket:count`` pairs, space separated, empty buckets left out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import ColumnElement, case, literal

FIRST = 0.01
RATIO = 1.25
#: Buckets between FIRST and the last edge; one more below, one more above.
EDGES = 82
BOUNDS = tuple(FIRST * RATIO**i for i in range(EDGES + 1))
#: The factor a histogram percentile may be off by (between FIRST and the last edge).
RESOLUTION = math.sqrt(RATIO)


def bucket_of(seconds: float) -> int:
    """The bucket of a run time, as ``bucket_sql`` computes it (the tests' reference)."""
    for i, bound in enumerate(BOUNDS):
        if seconds < bound:
            return i
    return EDGES + 1


def bucket_sql(seconds: ColumnElement[Any]) -> ColumnElement[Any]:
    """The bucket of ``seconds`` (a SQL expression), as an integer SQL expression."""
    return case(*((seconds < literal(b), i) for i, b in enumerate(BOUNDS)), else_=EDGES + 1)


def middle(bucket: int) -> float:
    """The value a run in ``bucket`` is taken to have: its geometric middle (half of FIRST
    below it, the last edge above)."""
    if bucket <= 0:
        return FIRST / 2
    if bucket > EDGES:
        return BOUNDS[-1]
    return math.sqrt(BOUNDS[bucket - 1] * BOUNDS[bucket])


def encode(counts: Mapping[int, int]) -> str | None:
    return " ".join(f"{b}:{n}" for b, n in sorted(counts.items()) if n) or None


def decode(text: str | None) -> Counter[int]:
    out: Counter[int] = Counter()
    for pair in (text or "").split():
        b, n = pair.split(":")
        out[int(b)] += int(n)
    return out


def merged(histograms: Iterable[Mapping[int, int]]) -> Counter[int]:
    out: Counter[int] = Counter()
    for h in histograms:
        out.update(h)
    return out


def percentile(counts: Mapping[int, int], p: float, top: float | None = None) -> float | None:
    """``percentile_cont(p)`` as the histogram can tell it: the values at 0-based ranks
    floor(h) and ceil(h), h = p·(n−1), interpolated; never above ``top`` (the exact max,
    where known). None for an empty histogram."""
    n = sum(counts.values())
    if n <= 0:
        return None
    h = p * (n - 1)
    lo, hi = math.floor(h), math.ceil(h)
    values: dict[int, float] = {}
    seen = 0
    for bucket in sorted(counts):
        count = counts[bucket]
        for rank in (lo, hi):
            if seen <= rank < seen + count:
                values[rank] = middle(bucket)
        seen += count
    value = values[lo] + (h - lo) * (values[hi] - values[lo])
    return min(value, top) if top is not None else value
