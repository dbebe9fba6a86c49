"""One analysis over one or more crontab files: findings, classification, next runs, plan.

``analyze`` is pure: files in (already parsed), a :class:`Report` out; the time is passed in.
``Report.to_json`` is the documented ``analyze --json`` document (docs/analyze-json.md,
``schema_version`` 1): fields are only ever added within a version.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from migrate_cron.analysis.classifier import Classification, classify
from migrate_cron.analysis.command import read_command
from migrate_cron.analysis.finding import Context, Finding
from migrate_cron.analysis.job import Job, make_job
from migrate_cron.analysis.planner import PlanItem, plan
from migrate_cron.analysis.rules import (
    DUPLICATE,
    DURATION,
    ORDERING,
    PER_LINE,
    duplicates,
    hidden_ordering,
    parse_finding,
    too_long,
)
from migrate_cron.crontab.entry import CrontabFile, Kind, Severity
from migrate_cron.errors import UsageError

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class JobReport:
    job: Job
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

    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    def reaches(self, severity: Severity) -> bool:
        worst = self.worst()
        return worst is not None and worst.rank >= severity.rank

    def to_json(self) -> dict[str, Any]:
        return _to_json(self)


def analyze(
    files: Sequence[CrontabFile],
    *,
    now: datetime,
    next_count: int = 3,
    durations: Mapping[str, float] | None = None,
    default_tz: str = "UTC",
) -> Report:
    """Run every rule over every job line, classify, plan, and compute the next runs."""
    ctx = Context(now=now)
    jobs: list[Job] = []
    findings_by_job: dict[int, list[Finding]] = {}
    syntax: list[Finding] = []
    names: Counter[str] = Counter()
    for crontab in files:
        for line in crontab.lines:
            for problem in line.problems:
                syntax.append(parse_finding(line, problem, crontab.host))
            if line.kind is not Kind.JOB:
                continue
            base = read_command(line.shell_command or "").name
            names[base] += 1
            name = base if names[base] == 1 else f"{base}-{names[base]}"
            jobs.append(make_job(line, crontab.host, default_tz, name))
    for index, job in enumerate(jobs):
        own: list[Finding] = []
        for rule in PER_LINE:
            assert rule.check is not None
            hit = rule.check(job, ctx)
            if hit is not None:
                own.append(rule.finding(job, hit))
        findings_by_job[index] = own
    index_of = {id(job): i for i, job in enumerate(jobs)}
    for rule, hits in (
        (ORDERING, hidden_ordering(jobs)),
        (DUPLICATE, duplicates(jobs)),
        (DURATION, too_long(jobs, durations or {})),
    ):
        for job, hit in hits:
            findings_by_job[index_of[id(job)]].append(rule.finding(job, hit))
    syntax_by_line: dict[tuple[str | None, str, int], list[Finding]] = {}
    for finding in syntax:
        syntax_by_line.setdefault((finding.host, finding.file, finding.line), []).append(finding)
    reports: list[JobReport] = []
    classifications: list[Classification] = []
    all_findings: list[Finding] = list(syntax)
    for index, job in enumerate(jobs):
        own = (
            syntax_by_line.get((job.host, job.line.file, job.line.number), [])
            + findings_by_job[index]
        )
        verdict = classify(job, own)
        classifications.append(verdict)
        all_findings.extend(findings_by_job[index])
        reports.append(
            JobReport(
                job=job,
                findings=tuple(own),
                classification=verdict,
                next_runs=_next_runs(job.line.schedule or "", job.timezone, now, next_count),
                description=job.schedule.describe() if job.schedule else "at boot",
            )
        )
    order = {(c.host, c.path): i for i, c in enumerate(files)}
    all_findings.sort(key=lambda f: (order.get((f.host, f.file), 0), f.line, f.rule))
    items = plan(jobs, all_findings, classifications)
    return Report(
        now=now,
        next_count=next_count,
        default_tz=default_tz,
        files=tuple(files),
        jobs=tuple(reports),
        findings=tuple(all_findings),
        plan=tuple(items),
    )


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


# -- JSON ----------------------------------------------------------------------------------


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _finding_json(f: Finding, located: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"rule": f.rule, "severity": str(f.severity)}
    if located:
        data.update(file=f.file, host=f.host, line=f.line, column=f.column, field=f.field)
    data.update(message=f.message, fix=f.fix)
    return data


def _entry_json(r: JobReport) -> dict[str, Any]:
    job = r.job
    line = job.line
    verdict = r.classification
    return {
        "file": line.file,
        "host": job.host,
        "line": line.number,
        "name": job.name,
        "user": line.user,
        "schedule": line.schedule,
        "timezone": job.timezone,
        "timezone_source": "CRON_TZ/TZ" if line.timezone else "default",
        "description": r.description,
        "runs_per_day": round(job.cadence.runs_per_day, 4) if job.cadence else 0,
        "command": line.command,
        "shell_command": line.shell_command,
        "stdin": line.stdin,
        "env": line.env,
        "next_runs": [_iso(t) for t in r.next_runs],
        "findings": [_finding_json(f, located=False) for f in r.findings],
        "recommendation": {"action": str(verdict.recommendation), "reason": verdict.reason},
        "policy": {"name": str(verdict.policy), "reason": verdict.policy_reason},
        "four_sentences": {
            "true": verdict.true_sentences,
            "should_move": verdict.should_move,
            "sentences": [
                {"id": s.id, "text": s.text, "true": s.true, "why": s.why}
                for s in verdict.sentences
            ],
        },
    }


def _to_json(report: Report) -> dict[str, Any]:
    from migrate_cron import __version__

    rejected = []
    for crontab in report.files:
        for line in crontab.lines:
            if line.kind is Kind.INVALID:
                problem = line.problems[0]
                rejected.append(
                    {
                        "file": line.file,
                        "host": crontab.host,
                        "line": line.number,
                        "column": problem.column,
                        "field": problem.field,
                        "rule": f"syntax/{problem.code}",
                        "reason": problem.message,
                        "text": line.text,
                    }
                )
    severities = Counter(str(f.severity) for f in report.findings)
    actions = Counter(str(r.classification.recommendation) for r in report.jobs)
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": f"migrate-cron {__version__}",
        "now": _iso(report.now),
        "next": report.next_count,
        "default_timezone": report.default_tz,
        "files": [
            {
                "path": c.path,
                "host": c.host,
                "format": c.format,
                "format_reason": c.format_reason,
                "lines": len(c.lines),
                "jobs": len(c.jobs),
                "rejected": len(c.invalid),
                "final_newline": not c.lines or c.lines[-1].raw.endswith("\n"),
            }
            for c in report.files
        ],
        "entries": [_entry_json(r) for r in report.jobs],
        "rejected": rejected,
        "findings": [_finding_json(f, located=True) for f in report.findings],
        "plan": [
            {
                "order": p.order,
                "file": p.file,
                "host": p.host,
                "line": p.line,
                "name": p.name,
                "schedule": p.schedule,
                "category": str(p.category),
                "reasons": list(p.reasons),
                "recommendation": p.recommendation,
                "policy": p.policy,
            }
            for p in report.plan
        ],
        "summary": {
            "files": len(report.files),
            "lines": sum(len(c.lines) for c in report.files),
            "jobs": len(report.jobs),
            "rejected": len(rejected),
            "findings": {s: severities.get(s, 0) for s in ("error", "warning", "info")},
            "recommendations": {
                a: actions.get(a, 0) for a in ("queue", "schedule+enqueue", "keep")
            },
            "should_move": sum(1 for r in report.jobs if r.classification.should_move),
        },
    }
