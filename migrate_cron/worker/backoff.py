"""How long to wait: retry delays after a failed attempt, and the idle poll of a quiet worker.

Both are pure: they take plain values (and an injectable random source) and return seconds, so
they are tested without a database or a clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from migrate_cron.registry import Backoff

# 2**60 times any sane base is far beyond any cap; larger exponents would overflow a float.
_MAX_EXPONENT = 60


def retry_delay(
    backoff: Backoff, attempts: int, rand: Callable[[], float] = random.random
) -> float:
    """Full-jitter exponential backoff: uniform in ``[0, min(cap, base * 2**attempts)]``.

    ``attempts`` is how many attempts have been made so far (the job's ``attempts`` column after
    the failed run, so 1 after the first failure). Full jitter spreads a burst of failures (the
    API they all call is down) over the whole window instead of retrying them in lockstep.
    """
    exponent = min(max(attempts, 0), _MAX_EXPONENT)
    ceiling = min(backoff.cap, backoff.base * (2.0**exponent))
    return max(0.0, ceiling * rand())


class IdleBackoff:
    """The wait between empty polls: starts at ``low``, doubles up to ``high``, resets on work.

    A busy queue is polled again at once; a quiet one costs one query per ``high`` seconds.
    """

    def __init__(self, low: float, high: float) -> None:
        self.low = max(0.0, low)
        self.high = max(self.low, high)
        self._next = self.low

    def next(self) -> float:
        """The wait to use now; the following one doubles."""
        wait = self._next
        self._next = min(self.high, max(self._next * 2, self.low or 0.001))
        return wait

    def reset(self) -> None:
        self._next = self.low
