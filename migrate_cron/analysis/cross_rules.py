"""Rules over several lines at once: hidden ordering (a job timed just after another), the same
line on several hosts, and runs longer than the interval between them (with ``--durations``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence

from migrate_cron.analysis.finding import Hit, Rule, RuleId
from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.rules import ORDERING_WINDOW_MINUTES
from migrate_cron.crontab.entry import Severity

ORDERING = Rule(
    RuleId.HIDDEN_ORDERING,
    Severity.WARNING,
    "Timed a few minutes after another job: it probably needs that one to have finished.",
    "chain them: enqueue this job when the earlier one succeeds instead of guessing its duration",
)
DUPLICATE = Rule(
    RuleId.DUPLICATE_HOST,
    Severity.WARNING,
    "The same line runs on several hosts, so every slot runs several times.",
    "run it once: the scheduler enqueues one job per slot (unique per slot) whatever the host "
    "count; remove the copies",
)
DURATION = Rule(
    RuleId.LONGER_THAN_INTERVAL,
    Severity.ERROR,
    "The command takes longer than the time between two runs: runs overlap.",
    "move it to the queue with concurrency 1, or schedule it less often than it takes",
)


def hidden_ordering(jobs: Sequence[CronJob]) -> list[tuple[CronJob, Hit]]:
    """Once-a-day jobs in one file on the same days, started 1-30 minutes after another."""
    groups: dict[tuple[object, ...], list[tuple[int, CronJob]]] = defaultdict(list)
    for job in jobs:
        if job.schedule is None:
            continue
        f = job.schedule.fields
        if len(f.hours) != 1 or len(f.minutes) != 1:
            continue
        key = (job.host, job.line.file, job.timezone, f.days, f.months, f.weekdays, f.day_or)
        groups[key].append((f.hours[0] * 60 + f.minutes[0], job))
    hits: list[tuple[CronJob, Hit]] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda item: (item[0], item[1].line.number))
        for (t0, first), (t1, second) in itertools.pairwise(members):
            gap = t1 - t0
            if 0 < gap <= ORDERING_WINDOW_MINUTES:
                hits.append(
                    (
                        second,
                        Hit(
                            f"starts {gap} min after line {first.line.number} ({first.name} at "
                            f"{t0 // 60:02d}:{t0 % 60:02d}): if it needs that job's result, the "
                            "order is only hoped for",
                            fix=f"enqueue {second.name} when {first.name} succeeds instead of "
                            f"starting it {gap} minutes later",
                        ),
                    )
                )
    return hits


def duplicates(jobs: Sequence[CronJob]) -> list[tuple[CronJob, Hit]]:
    """The same schedule, user and command in several files or on several hosts."""
    groups: dict[tuple[str, str | None, str], list[CronJob]] = defaultdict(list)
    for job in jobs:
        key = (job.line.schedule or "", job.line.user, " ".join(job.command.text.split()))
        groups[key].append(job)
    hits: list[tuple[CronJob, Hit]] = []
    for members in groups.values():
        places = {(j.host, j.line.file) for j in members}
        if len(places) < 2:
            continue
        hosts = sorted({j.host or j.line.file for j in members})
        where = ", ".join(hosts[:5]) + (f" and {len(hosts) - 5} more" if len(hosts) > 5 else "")
        for job in members:
            hits.append(
                (
                    job,
                    Hit(
                        f"the same line runs on {len(hosts)} hosts/files ({where}): each slot "
                        f"runs {len(members)} times"
                    ),
                )
            )
    return hits


def too_long(jobs: Sequence[CronJob], durations: Mapping[str, float]) -> list[tuple[CronJob, Hit]]:
    """Jobs whose measured duration exceeds the gap between two of their runs."""
    if not durations:
        return []
    hits: list[tuple[CronJob, Hit]] = []
    for job in jobs:
        if job.cadence is None:
            continue
        seconds = duration_of(job, durations)
        if seconds is None:
            continue
        gap = job.cadence.shortest_gap * 60
        if seconds > gap:
            hits.append(
                (
                    job,
                    Hit(
                        f"takes {seconds:g} s (from --durations) but runs every {gap:g} s: runs "
                        "overlap"
                    ),
                )
            )
    return hits


def duration_of(job: CronJob, durations: Mapping[str, float]) -> float | None:
    """Match a durations row to a job: its name, ``file:line``, ``host:file:line``, or a
    distinctive word (4+ characters) of its command."""
    for key in (
        job.name,
        f"{job.line.file}:{job.line.number}",
        f"{job.host}:{job.line.file}:{job.line.number}",
    ):
        if key in durations:
            return durations[key]
    for key, seconds in durations.items():
        if len(key) >= 4 and key in job.command.text:
            return seconds
    return None
