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
from migrate_cron.analysis.tree import Script, parse
from migrate_cron.crontab.entry import CrontabLine
from migrate_cron.crontab.schedule import Schedule


@dataclass(frozen=True, slots=True)
class Cadence:
    """How often a schedule fires, in minutes, from its fields (DST ignored)."""

    runs_per_day: float
    #: The most common gap between consecutive runs within a day (None: once a day or less).
    typical_gap: float | None
    #: The shortest gap between two consecutive runs (one day or more for daily jobs).
    shortest_gap: float


@dataclass(frozen=True, slots=True)
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

    @property
    def script(self) -> Script:
        """The command read with the shell grammar (cached per text)."""
        return parse(self.line.shell_command or "")


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


@lru_cache(maxsize=65536)
def schedule_key(expr: str) -> tuple[object, ...]:
    """A schedule as cron runs it: the expanded sets, the day-of-month/day-of-week "or" rule
    and whether DST moves it as a fixed-time job — not how it was spelt."""
    try:
        f = Schedule.parse(expr).fields
    except ValueError:
        return (expr,)
    return (f.minutes, f.hours, f.days, f.months, f.weekdays, f.day_or, f.fixed_time)


#: Env lines that change what cron does around the command (where its output is mailed), not
#: what the command does: two lines that differ only here are still the same job.
MAIL_ENV = frozenset({"MAILTO", "MAILFROM", "CONTENT_TYPE", "CONTENT_TRANSFER_ENCODING"})


def job_identity(
    line: CrontabLine, timezone: str, owner: str | None = None
) -> tuple[object, ...] | None:
    """What makes two crontab lines the same job: the schedule as cron expands it (``*/5``
    and ``0-59/5`` are one), the zone it is read in, the command and its ``%``-stdin, the
    user it runs as (the line's user field, else ``owner``: whose crontab the file is) and
    every env line that reaches the command. None for ``@reboot``: a boot happens per host, so
    its copies are not one job."""
    if line.schedule is None or line.schedule == "@reboot" or line.command is None:
        return None
    when = schedule_key(line.schedule)
    env = tuple(sorted((k, v) for k, v in line.env.items() if k not in MAIL_ENV))
    return (when, timezone, line.shell_command, line.stdin, line.user or owner, env)
