"""Time as a dependency.

Logic that depends on "now" (scheduling, policies, backoff) takes a ``Clock`` so tests can run
years of simulated time in milliseconds. Lease arithmetic does *not* use this clock: it runs on
the database server's clock (see ``store``), so worker hosts with skewed clocks agree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Timezone-aware UTC now."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


@dataclass
class FakeClock:
    """A clock that only moves when told to (``sleep`` advances it instantly)."""

    current: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))

    def now(self) -> datetime:
        return self.current

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        self.current = self.current + timedelta(seconds=seconds)

    def set(self, when: datetime) -> None:
        self.current = when
