"""Rules over several lines at once: hidden ordering (a job timed just after another), the same
line on several hosts, and runs longer than the interval between them (with ``--durations``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence

from migrate_cron.analysis.finding import Hit, Rule, RuleId
from migrate_cron.analysis.job import MAIL_ENV, CronJob, schedule_key
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
    "migrate it with all its origins (HOST:PATH): each host's line then only enqueues, and "
    "the queue keeps one job per slot whatever the host count",
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
    """The same line in several files or on several hosts (the analysis gave them one name:
    one job with several origins), and the near-copies that differ in a way that matters —
    another user or env — which stay separate jobs, saying why."""
    groups: dict[tuple[object, ...], list[CronJob]] = defaultdict(list)
    for job in jobs:
        if job.is_reboot:
            continue
        key = (schedule_key(job.line.schedule or ""), " ".join(job.command.text.split()))
        groups[key].append(job)
    hits: list[tuple[CronJob, Hit]] = []
    for members in groups.values():
        if len({(j.host, j.line.file) for j in members}) < 2:
            continue
        by_name: dict[str, list[CronJob]] = defaultdict(list)
        for job in members:
            by_name[job.name].append(job)
        for name, same in by_name.items():
            places = _places(same)
            others = [j for j in members if j.name != name]
            if len(places) >= 2:
                where = _listed(places)
                for job in same:
                    hits.append(
                        (
                            job,
                            Hit(
                                f"the same line runs on {len(places)} hosts/files ({where}): "
                                f"each slot runs {len(same)} times; `generate registry` makes "
                                f"them one job, {name}, with {len(places)} origins"
                            ),
                        )
                    )
            if others:
                why = _differs(same[0], others[0])
                for job in same:
                    hits.append(
                        (
                            job,
                            Hit(
                                f"the same command on the same schedule also runs in "
                                f"{_place(others[0])} ({others[0].name}), but {why}: they stay "
                                "separate jobs",
                                fix="if they are the same work, make the lines equal (user, "
                                "env) first, then generate again: one job, one run per slot",
                            ),
                        )
                    )
    return hits


def _places(jobs: Sequence[CronJob]) -> list[str]:
    """Where copies run, as short as stays unambiguous: the hosts, else host:file."""
    full = {(j.host, j.line.file) for j in jobs}
    short = {j.host or j.line.file for j in jobs}
    return sorted(short) if len(short) == len(full) else sorted({_place(j) for j in jobs})


def _place(job: CronJob) -> str:
    return f"{job.host}:{job.line.file}" if job.host else job.line.file


def _listed(places: Sequence[str]) -> str:
    return ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")


def _differs(a: CronJob, b: CronJob) -> str:
    """The first difference that keeps two near-copies separate jobs, in words."""
    if a.line.user != b.line.user:
        there, here = b.line.user or "the crontab owner", a.line.user or "the crontab owner"
        return f"it runs as {there} there, {here} here"
    if a.timezone != b.timezone:
        return f"its schedule is read in {b.timezone} there, {a.timezone} here"
    if a.line.stdin != b.line.stdin:
        return "its %-input differs"
    keys = sorted(
        k
        for k in set(a.line.env) | set(b.line.env)
        if k not in MAIL_ENV and a.line.env.get(k) != b.line.env.get(k)
    )
    if keys:
        return f"its environment differs ({', '.join(keys[:3])})"
    return "it is not the same command byte for byte, or runs as another crontab owner"


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
