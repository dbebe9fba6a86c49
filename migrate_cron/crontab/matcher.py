"""Wall-clock matching: the next (or previous) naive local time a schedule's fields match.

croniter (pinned ``>=7,<8``) is the engine, as the architecture says: we do not keep a
calendar walk of our own. It is fed the sets :mod:`migrate_cron.crontab.fields` already
validated and expanded — plain comma lists, never the user's text — because croniter's own
parser reads some cron syntax differently (``5-5`` as "every minute", ``*/2`` in day of week
over 0-6 instead of 0-7, the day-of-month/day-of-week OR rule decided from the expanded sets
rather than from cron's "field starts with *" flags). With ``day_or=False`` croniter only
intersects fields; cron's OR rule is applied here by asking one template per side (day of
month, day of week) and taking the nearer answer.

Wall times only: naive datetimes in and out. Mapping wall times to instants across DST follows
Vixie cron, not croniter's DST handling, and lives in :mod:`migrate_cron.crontab.schedule`.

Building a croniter parses and expands its template (about 0.2 ms), so there is one matcher per
distinct field set, cached: 100,000 crontab lines or 10,000 registry jobs with a few hundred
schedules build a few hundred. A croniter object keeps the time it last computed as state, so
each matcher serialises its steps with a lock; matchers are safe to share between threads
(the scheduler and the worker call them from several).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime
from functools import lru_cache
from typing import Any

from migrate_cron.crontab.fields import CronFields

#: croniter gives up after this many years without a match (29 February on a given weekday
#: recurs within 40 years, the 2100 non-leap year included).
HORIZON_YEARS = 60
_EPOCH = datetime(2000, 1, 1)


class CroniterMatcher:
    """The cron wall-clock matcher for one field set, backed by croniter."""

    def __init__(self, fields: CronFields) -> None:
        from croniter import croniter  # imported on first use: keeps CLI start-up fast

        self._iters: tuple[Any, ...] = tuple(
            croniter(t, _EPOCH, day_or=False, max_years_between_matches=HORIZON_YEARS)
            for t in templates(fields)
        )
        self._lock = threading.Lock()

    def next_wall(self, start: datetime) -> datetime | None:
        """The first matching wall time strictly after ``start`` (naive), or None."""
        return self._step(start, forward=True)

    def prev_wall(self, start: datetime) -> datetime | None:
        """The latest matching wall time strictly before ``start`` (naive), or None."""
        return self._step(start, forward=False)

    def _step(self, start: datetime, *, forward: bool) -> datetime | None:
        best: datetime | None = None
        with self._lock:
            for it in self._iters:
                try:
                    if forward:
                        found = it.get_next(datetime, start_time=start)
                    else:
                        found = it.get_prev(datetime, start_time=start)
                except (ValueError, OverflowError):
                    # CroniterBadDateError (a ValueError): no match within the horizon; the
                    # others: the search ran off the calendar (before year 1, after 9999).
                    continue
                if best is None or (found < best if forward else found > best):
                    best = found
        return best


def templates(fields: CronFields) -> tuple[str, ...]:
    """croniter expressions equivalent to ``fields`` (two when cron ORs the day fields)."""
    minutes = _join(fields.minutes, 60)
    hours = _join(fields.hours, 24)
    days = _join(fields.days, 31)
    months = _join(fields.months, 12)
    weekdays = _join(fields.weekdays, 7)
    if fields.day_or:
        return (
            f"{minutes} {hours} {days} {months} *",
            f"{minutes} {hours} * {months} {weekdays}",
        )
    return (f"{minutes} {hours} {days} {months} {weekdays}",)


@lru_cache(maxsize=16384)
def make_matcher(fields: CronFields) -> CroniterMatcher:
    """The shared matcher for ``fields`` (built once per distinct field set)."""
    return CroniterMatcher(fields)


def walls_after(matcher: CroniterMatcher, start: datetime) -> Iterator[datetime]:
    """Matching wall times strictly after ``start``, ascending, until none is left."""
    current = start
    while True:
        wall = matcher.next_wall(current)
        if wall is None:
            return
        yield wall
        current = wall


def _join(values: tuple[int, ...], full: int) -> str:
    return "*" if len(values) == full else ",".join(map(str, values))
