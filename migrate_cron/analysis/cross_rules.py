"""Rules over several lines at once: hidden ordering (a job timed just after another), the same
line on several hosts, and runs longer than the interval between them (with ``--durations``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence

from migrate_cron.analysis.dataflow import Paths, common_place, link, paths
from migrate_cron.analysis.finding import Hit, Rule, RuleId
from migrate_cron.analysis.job import MAIL_ENV, CronJob, schedule_key
from migrate_cron.analysis.naming import naming
from migrate_cron.analysis.schedule_rules import ORDERING_WINDOW_MINUTES
from migrate_cron.crontab.entry import Severity

ORDERING = Rule(
    RuleId.HIDDEN_ORDERING,
    Severity.WARNING,
    "Two jobs work on the same data and only the clock orders them (or nothing does, when "
    "they start in the same minute).",
    "chain them: enqueue the later job when the earlier one succeeds instead of guessing its "
    "duration",
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
    """Jobs of one file whose order matters and is not enforced: a job that reads what an
    earlier one writes (a data link read from the commands: :mod:`dataflow`) up to
    ``ORDERING_WINDOW_MINUTES`` later, and jobs started in the same minute that share such a
    link or the application directory they work in. Time alone is never a link."""
    by_file: dict[tuple[object, ...], list[CronJob]] = defaultdict(list)
    for job in jobs:
        if job.schedule is not None:
            by_file[(job.host, job.line.file, job.timezone)].append(job)
    hits: list[tuple[CronJob, Hit]] = []
    for members in by_file.values():
        if len(members) < 2 or len(members) > 400:
            continue  # a generated file of thousands of jobs: pairs are not looked at
        found = [paths(job.script) for job in members]
        for (a, pa), (b, pb) in itertools.permutations(zip(members, found, strict=True), 2):
            hit = _ordering(a, pa, b, pb)
            if hit is not None:
                hits.append((b, hit))
        hits.extend(_staggered(members))
    return _merged(hits)


def _staggered(members: Sequence[CronJob]) -> list[tuple[CronJob, Hit]]:
    """Runs of one command with different arguments, where in two or more schedule blocks a
    group started together is followed, a few minutes later, by one more run that differs from
    them in the same argument: a deliberate offset, repeated, so the later run is timed to
    follow the others (the one case where timing is evidence of itself)."""
    families: dict[str, list[CronJob]] = defaultdict(list)
    for job in members:
        found = naming(job.line.shell_command or "", job.line.env)
        if found is not None and job.cadence is not None:
            families[found.base].append(job)
    hits: list[tuple[CronJob, Hit]] = []
    for family in families.values():
        if len(family) < 6:
            continue
        blocks: dict[tuple[object, ...], list[CronJob]] = defaultdict(list)
        for job in family:
            blocks[schedule_key(job.line.schedule or "")].append(job)
        followers: list[tuple[CronJob, list[CronJob], int, frozenset[str]]] = []
        for block in blocks.values():
            if len(block) < 2:
                continue
            for job in family:
                if job in block:
                    continue
                gap = _offset(block[0], job)
                if gap is None:
                    continue
                words = (
                    set(job.script.top[-1].argv)
                    - set().union(*(set(b.script.top[-1].argv) for b in block if b.script.top))
                    if job.script.top
                    else set()
                )
                followers.append((job, block, gap, frozenset(words)))
        marks = [f for f in followers if f[3]]
        repeated = [f for f in marks if any(g is not f and g[3] == f[3] for g in marks)]
        for job, block, gap, extra in repeated:
            lines = ", ".join(str(b.line.number) for b in block)
            hits.append(
                (
                    job,
                    Hit(
                        f"starts {gap} min after lines {lines} (the same command without "
                        f"{' '.join(sorted(extra))}), an offset the file repeats in another "
                        "block: it is timed to follow them, and that order is only hoped for",
                        fix=f"enqueue {job.name} when the runs of lines {lines} succeed",
                    ),
                )
            )
    return hits


def _offset(a: CronJob, b: CronJob) -> int | None:
    """The one offset (1-15 minutes) by which every run of ``b`` follows a run of ``a``."""
    if not _days_meet(a, b):
        return None
    ta, tb = sorted(_times(a)), sorted(_times(b))
    if len(ta) != len(tb):
        return None
    gaps = {y - x for x, y in zip(ta, tb, strict=True)}
    if len(gaps) != 1:
        return None
    gap = gaps.pop()
    return gap if 0 < gap <= 15 else None


def _ordering(a: CronJob, pa: Paths, b: CronJob, pb: Paths) -> Hit | None:
    """A finding on ``b`` about ``a`` (another line), or None."""
    assert a.schedule is not None and b.schedule is not None
    what = link(pa, pb)
    rare = all(j.cadence is not None and j.cadence.runs_per_day <= 24 for j in (a, b))
    together = _same_minute(a, b) if (rare or what is not None) else None
    if together is not None:
        if a.line.number > b.line.number and what is None:
            return None  # said once, on the later line
        why = f"it reads {what}" if what else f"both work in {common_place(pa, pb)}"
        if what is None and common_place(pa, pb) is None:
            return None
        return Hit(
            f"starts in the same minute as line {a.line.number} ({a.name}, {together}) and {why}: "
            "cron forks both at once, in no order, so neither can count on the other",
            fix=f"run them one after the other: enqueue {b.name} when {a.name} succeeds",
        )
    if what is None:
        return None
    gap = _gap_after(a, b)
    if gap is None:
        return None
    start = _clock(a)
    return Hit(
        f"starts {gap} min after line {a.line.number} ({a.name}{start}), whose output it needs "
        f"({what}): the order is only hoped for",
        fix=f"enqueue {b.name} when {a.name} succeeds instead of starting it {gap} minutes later",
    )


def _times(job: CronJob) -> set[int]:
    assert job.schedule is not None
    f = job.schedule.fields
    return {h * 60 + m for h in f.hours for m in f.minutes}


def _days_meet(a: CronJob, b: CronJob) -> bool:
    assert a.schedule is not None and b.schedule is not None
    fa, fb = a.schedule.fields, b.schedule.fields
    if not set(fa.months) & set(fb.months):
        return False
    if fa.day_star and fb.day_star:
        return bool(set(fa.weekdays) & set(fb.weekdays))
    if fa.weekday_star and fb.weekday_star:
        return bool(set(fa.days) & set(fb.days))
    return True


def _same_minute(a: CronJob, b: CronJob) -> str | None:
    common = _times(a) & _times(b)
    if not common or not _days_meet(a, b):
        return None
    first = min(common)
    return f"at {first // 60:02d}:{first % 60:02d}"


def _gap_after(a: CronJob, b: CronJob) -> int | None:
    """Minutes from a run of ``a`` to the next start of ``b`` on the same day, when every run
    of ``b`` follows one of ``a`` within the window; None otherwise."""
    if not _days_meet(a, b):
        return None
    ta, tb = sorted(_times(a)), sorted(_times(b))
    if len(tb) > 24:
        return None
    gaps = []
    for t in tb:
        before = [x for x in ta if x < t]
        if not before:
            return None
        gaps.append(t - before[-1])
    gap = max(gaps)
    return gap if 0 < gap <= ORDERING_WINDOW_MINUTES else None


def _clock(job: CronJob) -> str:
    times = sorted(_times(job))
    if len(times) == 1:
        return f" at {times[0] // 60:02d}:{times[0] % 60:02d}"
    return ""


def _merged(hits: list[tuple[CronJob, Hit]]) -> list[tuple[CronJob, Hit]]:
    """One finding per line: several links are said in one sentence."""
    by_job: dict[int, tuple[CronJob, list[Hit]]] = {}
    for job, hit in hits:
        by_job.setdefault(id(job), (job, []))[1].append(hit)
    out = []
    for job, found in by_job.values():
        if len(found) == 1:
            out.append((job, found[0]))
        else:
            out.append((job, Hit(" Also: ".join(h.message for h in found), found[0].fix)))
    return out


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
