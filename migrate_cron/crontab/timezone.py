"""UTC-offset transitions of an IANA zone, found once per (zone, year) and cached.

``zoneinfo`` answers "what is the offset at this instant" but not "where are the transitions".
Schedules need the latter: away from a transition a wall-clock time maps to UTC with one constant
offset (the fast path, one subtraction), and only within a few hours of a transition do we pay for
resolving every wall time separately. Transitions are found by sampling the offset once a day and
bisecting to the second where it changes (zones never change offset twice in one day).
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo

from migrate_cron.crontab.fields import ScheduleError

_DAY = timedelta(days=1)
_SECOND = timedelta(seconds=1)
#: Vixie cron treats a clock change of 3 hours or more as "the time was set", not DST.
VIXIE_JUMP = timedelta(hours=3)


@dataclass(frozen=True)
class Transition:
    """The offset changes from ``before`` to ``after`` at instant ``at`` (naive UTC)."""

    at: datetime
    before: timedelta
    after: timedelta

    #: How far from ``at`` a wall time can map irregularly (the shift plus an hour of slack).
    margin: timedelta = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "margin", abs(self.shift) + timedelta(hours=1))

    @property
    def shift(self) -> timedelta:
        return self.after - self.before

    @property
    def is_jump(self) -> bool:
        """True when cron would see "the clock was set" instead of a DST change."""
        return abs(self.shift) >= VIXIE_JUMP


class ZoneTable:
    """Offsets and transitions of one zone; safe to share between threads."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.zone: tzinfo = UTC if name in ("UTC", "Etc/UTC") else _load(name)
        self.fixed = self.zone is UTC
        self._years: dict[int, list[Transition]] = {}
        self._lock = threading.Lock()

    def offset_at(self, instant: datetime) -> timedelta:
        """UTC offset at a naive-UTC instant."""
        if self.fixed:
            return timedelta(0)
        offset = instant.replace(tzinfo=UTC).astimezone(self.zone).utcoffset()
        assert offset is not None
        return offset

    def transitions(self, year: int) -> list[Transition]:
        found = self._years.get(year)
        if found is None:
            found = [] if self.fixed else self._scan(year)
            with self._lock:
                self._years[year] = found
        return found

    def next_transition(self, after: datetime, years: int = 2) -> Transition | None:
        """The first transition strictly after ``after`` within ``years`` calendar years."""
        for year in range(after.year, after.year + years + 1):
            items = self.transitions(year)
            i = bisect.bisect_right([t.at for t in items], after)
            if i < len(items):
                return items[i]
        return None

    def prev_transition(self, before: datetime, years: int = 2) -> Transition | None:
        """The last transition at or before ``before`` within ``years`` calendar years."""
        for year in range(before.year, before.year - years - 1, -1):
            items = self.transitions(year)
            i = bisect.bisect_right([t.at for t in items], before)
            if i > 0:
                return items[i - 1]
        return None

    def resolve(self, wall: datetime) -> tuple[timedelta, timedelta]:
        """The offsets of a naive wall time with fold=0 and fold=1 (PEP 495).

        Equal: the wall time exists once. fold0 > fold1: it exists twice (clocks went back).
        fold0 < fold1: it does not exist (clocks went forward over it).
        """
        if self.fixed:
            return timedelta(0), timedelta(0)
        aware = wall.replace(tzinfo=self.zone)
        first = aware.utcoffset()
        second = aware.replace(fold=1).utcoffset()
        assert first is not None and second is not None
        return first, second

    def _scan(self, year: int) -> list[Transition]:
        found: list[Transition] = []
        day = datetime(year, 1, 1)
        end = datetime(year + 1, 1, 1)
        previous = self.offset_at(day)
        while day < end:
            following = day + _DAY
            offset = self.offset_at(following)
            if offset != previous:
                found.append(self._bisect(day, following, previous, offset))
                previous = offset
            day = following
        return found

    def _bisect(
        self, low: datetime, high: datetime, before: timedelta, after: timedelta
    ) -> Transition:
        while high - low > _SECOND:
            middle = low + (high - low) / 2
            middle = middle.replace(microsecond=0)
            if self.offset_at(middle) == before:
                low = middle
            else:
                high = middle
        return Transition(at=high, before=before, after=after)


def _load(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError, OSError) as exc:
        raise ScheduleError(unknown_zone_message(name), field="timezone") from exc


def unknown_zone_message(name: str) -> str:
    """The one message for a zone name that is not an IANA zone, wherever it was given."""
    return f'unknown timezone "{name}" (use an IANA name such as Europe/Berlin or UTC)'


def zone_exists(name: str) -> bool:
    if not name:
        return False
    try:
        ZoneInfo(name)
    except (ValueError, KeyError, OSError):
        return False
    return True


def check_zone(name: str) -> str:
    """``name`` if it is an IANA zone; else a usage error with the one message."""
    if not zone_exists(name):
        from migrate_cron.errors import UsageError

        raise UsageError(unknown_zone_message(name))
    return name


#: Names of UTC that hosts write in /etc/timezone or the /etc/localtime link.
_UTC_ALIASES = frozenset({"Etc/UTC", "Etc/Universal", "Etc/Zulu", "UCT", "Universal", "Zulu"})


def host_timezone() -> str:
    """The IANA name of the zone cron runs in on this host, or ``UTC`` when it cannot be told.

    tzlocal reads it the way the host's own tools do ($TZ, /etc/timezone, the /etc/localtime
    link, …). Aliases of UTC are reported as ``UTC``, so reports and registries written on two
    hosts with different spellings of UTC agree.
    """
    import tzlocal

    try:
        name = tzlocal.get_localzone_name() or "UTC"
    except Exception:  # tzlocal raises for a $TZ or config it cannot map to a zone name
        return "UTC"
    name = name.lstrip(":")
    if name in _UTC_ALIASES:
        return "UTC"
    return name if zone_exists(name) else "UTC"


@lru_cache(maxsize=1024)
def zone_table(name: str) -> ZoneTable:
    """One shared table per zone name (zone loading and scans happen once per process)."""
    return ZoneTable(name)


def zone(name: str) -> tzinfo:
    """The tzinfo for an IANA name (UTC as the fixed ``datetime.UTC``)."""
    return UTC if name in ("UTC", "Etc/UTC") else _load(name)


@dataclass(frozen=True)
class DstWindow:
    """The local wall-clock window a DST change affects: ``[low, high)`` does not exist
    (clocks go forward) or happens twice (clocks go back). Naive local times."""

    transition: Transition
    low: datetime
    high: datetime

    @property
    def forward(self) -> bool:
        return self.transition.after > self.transition.before

    @property
    def span(self) -> str:
        return f"{self.low:%H:%M}-{self.high - timedelta(minutes=1):%H:%M}"


def dst_windows(name: str, year: int, years: int = 2) -> list[DstWindow]:
    """The DST windows of zone ``name`` in ``years`` calendar years from ``year``, as cron sees
    them: a change of 3 hours or more is "the clock was set" to Vixie cron, not DST, and is left
    out. The one definition ``explain``, the analysis rule and the docs use."""
    table = zone_table(name)
    out = []
    for y in range(year, year + years):
        for t in table.transitions(y):
            if t.is_jump:
                continue
            low = t.at + min(t.before, t.after)
            high = t.at + max(t.before, t.after)
            out.append(DstWindow(t, low, high))
    return out
