"""The trend charts' buckets (``store/trends.py``): clock-aligned, 60-180 of them whatever the
window, the last one ending now. No database needed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from migrate_cron.store.trends import MAX_BUCKETS, trend_grid

NOW = datetime(2026, 6, 1, 12, 34, 56, tzinfo=UTC)


@pytest.mark.parametrize(
    ("window", "step", "count"),
    [(3600, 60, 61), (86400, 600, 145), (7 * 86400, 3600, 169), (30 * 86400, 21600, 121)],
)
def test_each_window_gets_its_bucket(window: float, step: int, count: int) -> None:
    grid = trend_grid(window, NOW)
    assert (grid.step, grid.count) == (step, count)
    assert grid.start.timestamp() % step == 0  # a clock minute, hour, 6 hours
    assert grid.bucket_start(grid.count - 1) <= NOW < grid.bucket_start(grid.count)
    assert grid.bucket_end(grid.count - 1) == NOW  # the last bucket ends now, not later
    assert grid.bucket_end(0) == grid.bucket_start(1)


def test_any_window_stays_under_the_bucket_limit() -> None:
    for window in (60, 5000, 3 * 86400, 90 * 86400):
        assert trend_grid(window, NOW).count <= MAX_BUCKETS + 1
    assert trend_grid(365 * 86400, NOW).step == 86400  # beyond: a day a bucket
