"""Retry delays and the idle poll: pure functions, an injected random source, no database."""

from __future__ import annotations

import pytest

from migrate_cron.registry import Backoff
from migrate_cron.worker.backoff import IdleBackoff, retry_delay


@pytest.mark.parametrize(
    ("attempts", "rand", "expected"),
    [
        (1, 1.0, 20.0),  # base · 2^1
        (2, 1.0, 40.0),
        (3, 0.5, 40.0),  # half of base · 2^3
        (0, 1.0, 10.0),
        (10, 1.0, 100.0),  # capped
        (10_000, 1.0, 100.0),  # huge exponents do not overflow
        (4, 0.0, 0.0),  # full jitter reaches zero
    ],
)
def test_retry_delay_is_full_jitter_of_capped_exponential(
    attempts: int, rand: float, expected: float
) -> None:
    assert retry_delay(Backoff(base=10.0, cap=100.0), attempts, lambda: rand) == expected


def test_retry_delay_stays_inside_the_window_for_any_draw() -> None:
    import random

    rng = random.Random(7)
    backoff = Backoff(base=0.5, cap=30.0)
    for attempts in range(1, 12):
        ceiling = min(30.0, 0.5 * 2**attempts)
        draws = [retry_delay(backoff, attempts, rng.random) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in draws)
        assert max(draws) > ceiling * 0.8  # the whole window is used, not just the start


def test_zero_base_retries_at_once() -> None:
    assert retry_delay(Backoff(base=0.0, cap=0.0), 3, lambda: 1.0) == 0.0


def test_idle_backoff_doubles_to_the_cap_and_resets() -> None:
    idle = IdleBackoff(0.05, 0.3)
    assert [idle.next() for _ in range(5)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    idle.reset()
    assert idle.next() == 0.05
