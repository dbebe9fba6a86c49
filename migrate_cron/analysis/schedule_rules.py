"""Per-line rules about when a job runs: polling, a bare ``*`` minute, a fixed time inside a DST
change, ``@reboot``, a ``sleep`` that moves the job off its slot.

Like every rule they read the schedule's expanded fields and the command text only, with a cheap
test in front of anything costly (see ``rules.py``).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import lru_cache

from migrate_cron.analysis.finding import Context, Hit
from migrate_cron.analysis.job import CronJob, schedule_for
from migrate_cron.analysis.naming import job_base_name
from migrate_cron.analysis.work_calls import REPORTING, work_calls
from migrate_cron.analysis.wrappers import basename
from migrate_cron.crontab.fields import CronFields
from migrate_cron.crontab.timezone import dst_windows, zone_table

ORDERING_WINDOW_MINUTES = 120


POLL_MINUTES = 5


def every_minutes(gap: float) -> str:
    """ "every minute", "every 5 minutes"."""
    return "every minute" if gap == 1 else f"every {gap:g} minutes"


#: Fewer runs a day than this (a burst once a night, business hours) is not a poll.
POLL_RUNS_PER_DAY = 24


#: Words of a job's name that say each run produces something of its time (a sample, a
#: heartbeat, a graph) rather than looking for work that may not be there.
_SAMPLERS = frozenset(
    (
        "stats",
        "statistics",
        "metrics",
        "metric",
        "monitor",
        "monitoring",
        "collect",
        "collector",
        "snmp",
        "graph",
        "graphs",
        "rrd",
        "heartbeat",
        "keepalive",
        "alive",
        "realtime",
        "sample",
        "sampler",
        "munin",
        "telegraf",
        "uptime",
        "ping",
        "probe",
    )
)


def check_poll(job: CronJob, ctx: Context) -> Hit | None:
    cadence = job.cadence
    if cadence is None or cadence.typical_gap is None or cadence.typical_gap > POLL_MINUTES:
        return None
    if cadence.runs_per_day < POLL_RUNS_PER_DAY:
        return None  # a burst (8-13 0 * * *) or a few hours a day: chosen, not polling
    if check_minute_star(job, ctx) is not None:
        return None  # `* 1 * * *`: a slip for `0 1 * * *`, said by minute-star
    if _samples(job):
        return None
    return Hit(
        f"polls {every_minutes(cadence.typical_gap)} ({cadence.runs_per_day:g} runs a day), "
        "and most runs likely find nothing to do"
    )


def _samples(job: CronJob) -> bool:
    """Each run does the work of its own time slot: it is handed the time (``$(date …)`` in
    an argument), it only stamps a file (``date > heartbeat``), or its name says it samples."""
    calls = work_calls(job.script)
    if not calls:
        return False
    for call, _ in calls:
        if any(w.raw.startswith("$(date") or w.raw.startswith("`date") for w in call.words):
            return True
    if all(
        basename(inner.argv[0]) in REPORTING or basename(inner.argv[0]) == "touch"
        for _, inner in calls
    ):
        return True
    words = set(re.split(r"[^a-z0-9]+", job_base_name(job)))
    return not words.isdisjoint(_SAMPLERS)


def check_sleep(job: CronJob, ctx: Context) -> Hit | None:
    if "sleep" not in job.command.text:
        return None
    top = [c for c in job.script.top if c.words]
    if len(top) < 2 or top[0].words[0].value != "sleep" or top[1].joined not in (";", "&&"):
        return None
    operands = top[0].words[1:]
    if len(operands) != 1:
        return None  # two operands: the sleep-operands finding says what happens
    amount = operands[0].raw
    if "RANDOM" in amount or "random" in amount or "shuf" in amount:
        return Hit(
            f"waits a random time ({amount}) before starting, to spread load across hosts",
            fix="drop the sleep: workers take jobs as capacity allows, no stampede to avoid",
        )
    if amount.isdigit():
        amount = f"{amount} s"
    return Hit(
        f"waits {amount} after its slot before it starts: if it waits for another job, that "
        "order is only hoped for; if it spreads load, the queue does that"
    )


def check_minute_star(job: CronJob, ctx: Context) -> Hit | None:
    """``* 1 * * *`` runs 60 times in hour 1; a written hour with a bare ``*`` minute is the
    classic slip for ``0 1 * * *``."""
    expr = job.line.schedule or ""
    fields = expr.split()
    if len(fields) != 5 or fields[0] != "*" or fields[1] == "*":
        return None
    hour = fields[1]
    if not re.fullmatch(r"\d+(,\d+)*|\*/\d+|\d+/\d+", hour):
        return None  # a range (9-17) is a deliberate every-minute window
    meant = " ".join(["0", *fields[1:]])
    runs = job.cadence.runs_per_day if job.cadence else 0
    hours = "of every hour" if hour in ("*/1", "0-23/1") else f"of hour {hour}"
    return Hit(
        f"runs every minute {hours} ({runs:g} runs a day): did you mean `{meant}` (once at "
        "minute 0)?",
        fix=f"write {meant} if it should run once at minute 0 of those hours",
    )


def check_dst(job: CronJob, ctx: Context) -> Hit | None:
    schedule = job.schedule
    if schedule is None or not schedule.fixed_time:
        return None
    return _dst_hit(job.line.schedule or "", job.timezone, ctx.now.year)


@lru_cache(maxsize=65536)
def _dst_hit(expr: str, timezone: str, year: int) -> Hit | None:
    if zone_table(timezone).fixed:
        return None
    fields = schedule_for(expr, timezone).fields
    for window in dst_windows(timezone, year):
        start, end = window.low, window.high
        day = start.date()
        if not _day_matches(fields, day):
            continue
        hit = _times_in(fields, start, end)
        if hit is None:
            continue
        when = f"{hit} on {day.isoformat()} in {timezone}"
        if window.forward:
            jump = end.strftime("%H:%M")
            what = f"{when} does not exist (clocks jump to {jump}): cron runs it at {jump}"
        else:
            what = f"{when} happens twice (clocks go back): cron runs it only the first time"
        span = window.span
        return Hit(
            what,
            fix=f"move it outside {span} local time, or schedule it in UTC (CRON_TZ=UTC on "
            "cronie) if it must run at exactly one instant",
        )
    return None


def check_reboot(job: CronJob, ctx: Context) -> Hit | None:
    if not job.is_reboot:
        return None
    return Hit("runs once when cron starts (after a reboot), not on a schedule")


def _day_matches(fields: CronFields, day: date) -> bool:
    if day.month not in fields.months:
        return False
    dom = day.day in fields.days
    dow = (day.isoweekday() % 7) in fields.weekdays
    return (dom or dow) if fields.day_or else (dom and dow)


def _times_in(fields: CronFields, start: datetime, end: datetime) -> str | None:
    """The first hh:mm of the job inside the wall-clock window [start, end) on one day."""
    low = start.hour * 60 + start.minute
    high = low + int((end - start).total_seconds() // 60)
    for h in fields.hours:
        for m in fields.minutes:
            if low <= h * 60 + m < high:
                return f"{h:02d}:{m:02d}"
    return None
