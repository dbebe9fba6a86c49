"""Clocks for driving the real scheduler loop through simulated time.

``WarpClock`` runs ``speed`` times faster than real time from a chosen start (``scheduler
--now ISO --speed N``): a compressed day for the multi-process tests, with real sleeps so
leases (on the database's real clock) still expire and standbys still take over.
``real_seconds`` says how long, in real time, a wait of some clock seconds lasts on a clock;
a ``FakeClock`` (``--speed 0``) jumps instead of waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from migrate_cron.clock import Clock, FakeClock


@dataclass
class WarpClock:
    """``start + (real time elapsed) * speed``."""

    start: datetime
    speed: float = 1.0
    monotonic: Callable[[], float] = time.monotonic
    _t0: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if self.speed <= 0:
            raise ValueError("speed must be positive")
        self._t0 = self.monotonic()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=(self.monotonic() - self._t0) * self.speed)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.speed)


def jumps(clock: Clock) -> bool:
    """True for clocks that move only when told to (waiting means jumping ahead)."""
    return isinstance(clock, FakeClock)


def real_seconds(clock: Clock, clock_seconds: float) -> float:
    """Real seconds that ``clock_seconds`` of this clock's time take to pass."""
    if jumps(clock):
        return 0.0
    return clock_seconds / float(getattr(clock, "speed", 1.0))


def run_clock(start: datetime | None, speed: float | None, until_given: bool, once: bool) -> Clock:
    """The clock a scheduler runs on: the system's, or from ``start`` (``--now``) one that
    jumps (``--once``, ``--speed 0``: it then needs an end) or runs ``speed`` times faster."""
    from migrate_cron.clock import SystemClock
    from migrate_cron.errors import UsageError

    if start is None:
        if speed is not None:
            raise UsageError("--speed needs --now (the simulated start)")
        return SystemClock()
    if once:
        return FakeClock(start)
    if speed is None or speed == 0:
        if not until_given:
            raise UsageError("--now without --once needs --until, or a --speed above 0")
        return FakeClock(start)
    if speed < 0:
        raise UsageError("--speed must be 0 or more")
    return WarpClock(start, speed)
