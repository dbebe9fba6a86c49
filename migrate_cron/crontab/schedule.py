"""A cron schedule and its fire times, identical to Debian/Vixie cron including DST.

Validation and expansion are ours (:mod:`migrate_cron.crontab.fields`: ``a-a`` ranges, names,
7 = Sunday and steps are resolved there, with a field and a reason for every rejection); which
wall-clock times match is croniter's answer (pinned ``>=7,<8``), fed those expanded sets, with
cron's day-of-month/day-of-week OR rule taken from the "field starts with *" flags — see
:mod:`migrate_cron.crontab.matcher`. This module maps wall times to instants with Vixie cron's
DST rules below (croniter's own DST handling is not cron's), and the tests compare the result
with cronsim, an independent implementation of Debian cron.

Daylight saving time — the rule implemented, from Vixie cron 3.0 ``cron.c`` (Debian's cron), whose
man page says: "Special considerations exist when the clock is changed by less than 3 hours, for
example at the beginning and end of daylight savings time. If the time has moved forwards, those
jobs which would have run in the time that was skipped will be run soon after the change.
Conversely, if the time has moved backwards by less than 3 hours, those jobs that fall into the
repeated time will not be re-run. Only jobs that run at a particular time (not specified as @hourly,
nor with '*' in the hour or minute specifier) are affected by this. Jobs which are specified with
wildcards are run based on the new time immediately." In ``cron.c`` terms:

* a *fixed-time* job is one whose minute and hour fields both do not start with ``*``;
* clocks go forward (wall times that do not exist): a fixed-time job due in the gap fires once at
  the instant of the change (e.g. 02:30 on the spring-forward day in Europe/Berlin fires at 03:00
  CEST = 01:00 UTC); a wildcard job simply has no run for the skipped wall times;
* clocks go back (wall times that exist twice): a fixed-time job fires only in the first pass;
  a wildcard job follows the wall clock and fires in both passes;
* a change of 3 hours or more is "the clock was set": every job skips the gap and repeats the
  repeated time (cron's ``default`` case);
* two slots of one fixed-time job that land on the same instant (``0 2,3 * * *`` on the
  spring-forward day) count once — cron would start the command twice within seconds, we keep
  one slot per instant because a slot is the unique key of a scheduled run.

This matches cronsim (which documents Debian semantics), our test reference.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from migrate_cron.crontab.fields import (
    MACROS,
    CronFields,
    ScheduleError,
    parse_fields,
    split_fields,
)
from migrate_cron.crontab.matcher import CroniterMatcher, make_matcher, walls_after
from migrate_cron.crontab.timezone import Transition, ZoneTable, zone_table

__all__ = ["Schedule", "ScheduleError"]

_MINUTE = timedelta(minutes=1)
_TINY = timedelta(microseconds=1)
_NO_TRANSITION_SPAN = timedelta(days=366)
#: How far back ``latest_at_or_before`` looks (four years: a Feb 29 job still has an answer).
LOOKBACK = timedelta(days=4 * 366)


@dataclass(frozen=True)
class Schedule:
    """One cron schedule in one timezone. Immutable, hashable, cheap to create repeatedly.

    ``expr`` is kept as written (trimmed); ``tz`` is an IANA zone name. All returned times are
    aware UTC datetimes. Parsed state is cached per expression, so creating the same schedule for
    10,000 jobs or 100,000 crontab lines parses it once.
    """

    expr: str
    tz: str = "UTC"
    _plan: _Plan = field(init=False, repr=False, compare=False, hash=False)
    _zone: ZoneTable = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "expr", self.expr.strip())
        object.__setattr__(self, "_plan", _compile(self.expr, allow_reboot=True))
        object.__setattr__(self, "_zone", zone_table(self.tz))

    @classmethod
    def parse(cls, expr: str, tz: str = "UTC", *, allow_reboot: bool = False) -> Schedule:
        """Validate like cron does and return the schedule; raise ScheduleError otherwise.

        ``@reboot`` is rejected unless ``allow_reboot`` (it has no fire times; the methods that
        compute them then raise ScheduleError).
        """
        plan = _compile(expr.strip(), allow_reboot=True)
        if plan.fields is None and not allow_reboot:
            raise ScheduleError("@reboot has no schedule")
        return cls(expr, tz)

    # -- what it is -------------------------------------------------------------------------

    @property
    def is_reboot(self) -> bool:
        return self._plan.fields is None

    @property
    def fields(self) -> CronFields:
        """The expanded field sets (raises ScheduleError for @reboot)."""
        return self._need_fields()

    @property
    def fixed_time(self) -> bool:
        """Cron's fixed-time job (minute and hour not starting with *): DST-sensitive."""
        return self._need_fields().fixed_time

    def describe(self) -> str:
        """The schedule in words, e.g. "at 02:30 every day"."""
        return _describe_cached(self.expr) if self._plan.fields else "at boot (when cron starts)"

    def runs_per_day(self) -> float:
        """Average fire times per day over a four-year cycle (DST ignored); 0 for @reboot."""
        return _runs_per_day(self.expr) if self._plan.fields else 0.0

    # -- when it fires ----------------------------------------------------------------------

    def next_after(self, t: datetime) -> datetime:
        """The first fire time strictly after ``t`` (aware), as aware UTC."""
        for instant in self._instants_after(_to_utc(t)):
            return instant.replace(tzinfo=UTC)
        raise ScheduleError(f"{self.expr!r} never fires again")  # pragma: no cover

    def next_runs(self, t: datetime, count: int) -> list[datetime]:
        """The next ``count`` fire times strictly after ``t``, aware UTC, ascending."""
        out: list[datetime] = []
        if count <= 0:
            return out
        for instant in self._instants_after(_to_utc(t)):
            out.append(instant.replace(tzinfo=UTC))
            if len(out) >= count:
                break
        return out

    def iter_between(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Fire times f with start < f <= end, aware UTC, ascending."""
        stop = _to_utc(end)
        for instant in self._instants_after(_to_utc(start)):
            if instant > stop:
                return
            yield instant.replace(tzinfo=UTC)

    def latest_at_or_before(self, t: datetime) -> datetime | None:
        """The latest fire time <= ``t``, or None if there was none in the last four years."""
        found = self._latest(_to_utc(t))
        return found.replace(tzinfo=UTC) if found is not None else None

    # -- internals ------------------------------------------------------------------------

    def _need_fields(self) -> CronFields:
        if self._plan.fields is None:
            raise ScheduleError("@reboot has no schedule")
        return self._plan.fields

    def _instants_after(self, after: datetime) -> Iterator[datetime]:
        """Naive-UTC fire instants > ``after``, ascending, forever (or until none exist)."""
        self._need_fields()
        zone = self._zone
        cursor = after
        while True:
            transition = _transition_near(zone, cursor)
            if transition is None or cursor < transition.at - transition.margin - _TINY:
                limit = (
                    transition.at - transition.margin
                    if transition is not None
                    else cursor + _NO_TRANSITION_SPAN
                )
                offset = zone.offset_at(cursor)
                for wall in self._plan.walls_after(_floor_minute(cursor + offset)):
                    instant = wall - offset
                    if instant >= limit:
                        break
                    cursor = instant
                    yield instant
                else:
                    return  # the schedule never fires again
                cursor = max(cursor, limit - _TINY)
            else:
                end = transition.at + transition.margin
                for instant in self._around(transition, cursor, end):
                    cursor = instant
                    yield instant
                cursor = max(cursor, end)

    def _around(self, tr: Transition, after: datetime, end: datetime) -> Iterator[datetime]:
        """Fire instants in (after, end] near one transition, resolving each wall time."""
        low = min(tr.before, tr.after)
        high = max(tr.before, tr.after)
        wild = not self._need_fields().fixed_time or tr.is_jump
        pending: list[datetime] = []
        seen: set[datetime] = set()  # two wall times that map to one instant give one slot
        for wall in self._plan.walls_after(_floor_minute(after + low)):
            for instant in self._resolve(wall, tr, wild):
                if after < instant <= end and instant not in seen:
                    seen.add(instant)
                    heapq.heappush(pending, instant)
            safe = wall - high
            while pending and pending[0] <= safe:
                yield heapq.heappop(pending)
            if safe > end:
                break
        while pending:
            yield heapq.heappop(pending)

    def _resolve(self, wall: datetime, tr: Transition, wild: bool) -> tuple[datetime, ...]:
        first, second = self._zone.resolve(wall)
        if first == second:
            return (wall - first,)
        if first > second:  # repeated wall time: first pass, and the second for wildcard jobs
            return (wall - first, wall - second) if wild else (wall - first,)
        if wild:  # skipped wall time: wildcard jobs have no run
            return ()
        jump = self._zone.next_transition(wall - second)
        return (jump.at,) if jump is not None else ()

    def _latest(self, t: datetime) -> datetime | None:
        zone = self._zone
        self._need_fields()
        cursor = t
        floor = t - LOOKBACK
        while cursor > floor:
            tr = zone.prev_transition(cursor + timedelta(days=1))
            while tr is not None and tr.at - tr.margin > cursor:
                tr = zone.prev_transition(tr.at - _TINY)
            if tr is not None and cursor <= tr.at + tr.margin:
                best = None
                for instant in self._instants_after(tr.at - tr.margin - _TINY):
                    if instant > cursor:
                        break
                    best = instant
                if best is not None:
                    return best
                cursor = tr.at - tr.margin - _TINY
                continue
            # No irregular window in (lower, cursor]: one offset maps wall times to instants.
            lower = tr.at + tr.margin if tr is not None else datetime(cursor.year - 2, 1, 1)
            lower = max(lower, floor)
            offset = zone.offset_at(cursor)
            wall = self._plan.wall_before(_floor_minute(cursor + offset) + _MINUTE)
            if wall is None:
                return None
            instant = wall - offset
            if instant > lower:
                return instant if instant > floor else None
            cursor = lower
        return None


def _transition_near(zone: ZoneTable, cursor: datetime) -> Transition | None:
    """The first transition whose irregular window ends after ``cursor``."""
    if zone.fixed:
        return None
    probe = cursor - timedelta(days=1)
    while True:
        tr = zone.next_transition(probe)
        if tr is None or tr.at + tr.margin > cursor:
            return tr
        probe = tr.at


def _to_utc(t: datetime) -> datetime:
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError("schedule times must be timezone-aware datetimes")
    return t.astimezone(UTC).replace(tzinfo=None)


def _floor_minute(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0)


class _Plan:
    """Parsed form of one expression, shared by every Schedule using it.

    The matcher (croniter, shared per distinct field set) is looked up on first use, so
    validating 100,000 lines does not pay for it.
    """

    def __init__(self, fields: CronFields | None) -> None:
        self.fields = fields
        self._matcher: CroniterMatcher | None = None

    @property
    def matcher(self) -> CroniterMatcher:
        if self._matcher is None:
            assert self.fields is not None
            self._matcher = make_matcher(self.fields)
        return self._matcher

    def walls_after(self, start: datetime) -> Iterator[datetime]:
        """Naive wall times that match, strictly after ``start``, ascending."""
        return walls_after(self.matcher, start)

    def wall_before(self, start: datetime) -> datetime | None:
        """The latest matching wall time strictly before ``start``."""
        return self.matcher.prev_wall(start)


@lru_cache(maxsize=65536)
def _compile(expr: str, *, allow_reboot: bool) -> _Plan:
    if not expr:
        raise ScheduleError("empty schedule")
    if expr.startswith("@"):
        return _compile_macro(expr, allow_reboot)
    tokens = split_fields(expr)
    if len(tokens) in (6, 7):
        raise ScheduleError(
            f"{len(tokens)} fields: looks like a Quartz or seconds-field expression pasted from "
            "another scheduler (cron has 5: minute hour day-of-month month day-of-week)"
        )
    if len(tokens) != 5:
        raise ScheduleError(
            f"{len(tokens)} field{'s' if len(tokens) != 1 else ''}: cron needs 5 "
            "(minute hour day-of-month month day-of-week) or an @macro"
        )
    return _Plan(parse_fields(tokens))


def _compile_macro(expr: str, allow_reboot: bool) -> _Plan:
    name = expr[1:]
    if name == "reboot":
        if not allow_reboot:
            raise ScheduleError("@reboot has no schedule")
        return _Plan(None)
    if name in MACROS:
        return _Plan(parse_fields(MACROS[name].split()))
    known = " ".join("@" + n for n in ("reboot", *MACROS))
    raise ScheduleError(f'unknown macro "{expr}" (cron knows {known}; names are lower case)')


@lru_cache(maxsize=65536)
def _describe_cached(expr: str) -> str:
    from migrate_cron.crontab.describe import describe

    fields = _compile(expr, allow_reboot=True).fields
    assert fields is not None
    return describe(fields)


@lru_cache(maxsize=1)
def _calendar_counts() -> tuple[list[list[list[int]]], list[list[int]], list[list[int]]]:
    """Day counts over 2001-2028 (28 years = 1461 whole weeks, so every weekday and leap day
    appears at its long-run frequency): by [month][day][weekday], by [month][day] and by
    [month][weekday]."""
    counts = [[[0] * 7 for _ in range(32)] for _ in range(13)]
    day = date(2001, 1, 1)
    end = date(2029, 1, 1)
    one = timedelta(days=1)
    while day < end:
        counts[day.month][day.day][day.isoweekday() % 7] += 1
        day += one
    by_day = [[sum(counts[m][d]) for d in range(32)] for m in range(13)]
    for m in range(13):
        by_day[m][0] = sum(by_day[m])  # index 0 (no day 0) holds the month's total
    by_weekday = [[sum(counts[m][d][w] for d in range(32)) for w in range(7)] for m in range(13)]
    return counts, by_day, by_weekday


_CYCLE_DAYS = (date(2029, 1, 1) - date(2001, 1, 1)).days


@lru_cache(maxsize=65536)
def _runs_per_day(expr: str) -> float:
    fields = _compile(expr, allow_reboot=True).fields
    assert fields is not None
    per_day = len(fields.minutes) * len(fields.hours)
    all_days = len(fields.days) == 31
    all_weekdays = len(fields.weekdays) == 7
    if all_days and all_weekdays and len(fields.months) == 12:
        return float(per_day)
    counts, by_day, by_weekday = _calendar_counts()
    matching = 0
    for m in fields.months:
        month_total = by_day[m][0]
        on_days = month_total if all_days else sum(by_day[m][d] for d in fields.days)
        on_weekdays = (
            month_total if all_weekdays else sum(by_weekday[m][w] for w in fields.weekdays)
        )
        if all_weekdays:
            both = on_days
        elif all_days:
            both = on_weekdays
        else:
            both = sum(counts[m][d][w] for d in fields.days for w in fields.weekdays)
        matching += (on_days + on_weekdays - both) if fields.day_or else both
    return per_day * matching / _CYCLE_DAYS
