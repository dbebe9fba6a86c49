"""A job line as the rules see it: the parsed line plus what its schedule implies.

Everything derived from the schedule (gaps between runs, runs per day) is cached per
expression, so a 100,000-line crontab with a few thousand distinct schedules stays fast.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from migrate_cron.analysis.command import Command, read_command
from migrate_cron.crontab.entry import CrontabLine
from migrate_cron.crontab.schedule import Schedule


@dataclass(frozen=True)
class Cadence:
    """How often a schedule fires, in minutes, from its fields (DST ignored)."""

    runs_per_day: float
    #: The most common gap between consecutive runs within a day (None: once a day or less).
    typical_gap: float | None
    #: The shortest gap between two consecutive runs (one day or more for daily jobs).
    shortest_gap: float


@dataclass(frozen=True)
class CronJob:
    line: CrontabLine
    host: str | None
    schedule: Schedule | None  # None for @reboot
    timezone: str  # effective: CRON_TZ/TZ or the default for the host
    command: Command
    cadence: Cadence | None  # None for @reboot
    name: str

    @property
    def is_reboot(self) -> bool:
        return self.schedule is None


def make_job(line: CrontabLine, host: str | None, default_tz: str, name: str) -> CronJob:
    timezone = line.timezone or default_tz
    assert line.schedule is not None and line.command is not None
    if line.schedule == "@reboot":
        schedule = None
        cadence = None
    else:
        schedule = schedule_for(line.schedule, timezone)
        cadence = cadence_of(line.schedule)
    return CronJob(
        line=line,
        host=host,
        schedule=schedule,
        timezone=timezone,
        command=read_command(line.shell_command or ""),
        cadence=cadence,
        name=name,
    )


@lru_cache(maxsize=65536)
def schedule_for(expr: str, timezone: str) -> Schedule:
    return Schedule.parse(expr, timezone)


@lru_cache(maxsize=65536)
def cadence_of(expr: str) -> Cadence:
    schedule = Schedule.parse(expr)
    fields = schedule.fields
    per_day = schedule.runs_per_day()
    times = [h * 60 + m for h in fields.hours for m in fields.minutes]
    if len(times) < 2:
        return Cadence(per_day, None, 1440.0 / per_day if per_day else float("inf"))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    gaps.append(times[0] + 1440 - times[-1])
    typical = Counter(gaps).most_common(1)[0][0]
    return Cadence(per_day, float(typical), float(min(gaps)))
