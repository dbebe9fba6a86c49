"""``store/histogram.py``: run-time buckets and percentiles read from them, within the stated
resolution of ``percentile_cont``; and ``rollup.cover``, which cuts a window into rolled and
live pieces."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from migrate_cron.store.histogram import (
    BOUNDS,
    EDGES,
    RESOLUTION,
    bucket_of,
    decode,
    encode,
    merged,
    percentile,
)
from migrate_cron.store.rollup import cover


def exact(values: list[float], p: float) -> float:
    """``percentile_cont``: linear interpolation between ranks."""
    ordered = sorted(values)
    h = p * (len(ordered) - 1)
    lo = int(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("p", [0.5, 0.95])
def test_percentiles_are_within_the_resolution(seed: int, p: float) -> None:
    rng = random.Random(seed)
    values = [rng.lognormvariate(rng.uniform(-3, 8), rng.uniform(0.1, 2)) for _ in range(
        rng.randint(1, 400))]  # fmt: skip
    values = [v for v in values if 0.01 <= v < BOUNDS[-1]] or [1.0]
    counts = merged([{bucket_of(v): 1} for v in values])
    got = percentile(counts, p)
    want = exact(values, p)
    assert got is not None
    assert want / RESOLUTION <= got * (1 + 1e-9) and got <= want * RESOLUTION * (1 + 1e-9)


def test_buckets_and_their_text() -> None:
    assert bucket_of(0.0) == 0 and bucket_of(0.0099) == 0
    assert bucket_of(0.01) == 1 and bucket_of(0.0125) == 2
    assert bucket_of(BOUNDS[-1] * 2) == EDGES + 1
    counts = {3: 2, 40: 5}
    assert decode(encode(counts)) == counts
    assert encode({}) is None and decode(None) == {}
    assert percentile({}, 0.5) is None
    # The exact max caps a percentile; a single run reads as its bucket's middle.
    one = percentile({bucket_of(5.0): 1}, 0.5)
    assert one is not None and 5.0 / RESOLUTION <= one <= 5.0 * RESOLUTION
    assert percentile({bucket_of(5.0): 1}, 0.95, top=4.5) == 4.5


def test_cover_cuts_a_window_into_rolled_and_live_pieces() -> None:
    def t(h: int, m: int = 0) -> datetime:
        return datetime(2026, 6, 1, tzinfo=UTC) + timedelta(hours=h, minutes=m)

    levels = [(21600, t(0), t(12)), (3600, t(0), t(12)), (600, t(0), t(12, 40))]
    assert cover(t(1, 5), t(13), levels) == [
        (None, t(1, 5), t(1, 10)),
        (600, t(1, 10), t(2)),
        (3600, t(2), t(6)),
        (21600, t(6), t(12)),
        (600, t(12), t(12, 40)),
        (None, t(12, 40), t(13)),
    ]
    assert cover(t(1), t(2), []) == [(None, t(1), t(2))]
