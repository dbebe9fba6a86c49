"""One analysis over one or more crontab files: findings, classification, next runs, plan.

``analyze`` is pure: files in (already parsed), a :class:`Report` out; the time is passed in.
``Report.to_json`` is the documented ``analyze --json`` document (docs/analyze-json.md,
``schema_version`` 1): fields are only ever added within a version.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from migrate_cron.analysis.classifier import Classification, classify
from migrate_cron.analysis.command import read_command
from migrate_cron.analysis.finding import Context, Finding, Hit, Rule
from migrate_cron.analysis.job import CronJob, make_job
from migrate_cron.analysis.planner import PlanItem, plan_jobs
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
from migrate_cron.crontab.parser import gc_paused
from migrate_cron.errors import UsageError

SCHEMA_VERSION = 1


@dataclass(frozen=True)
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

    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    def reaches(self, severity: Severity) -> bool:
        worst = self.worst()
        return worst is not None and worst.rank >= severity.rank

    def to_json(self, *, entries: bool = True) -> dict[str, Any]:
        """The documented ``--json`` document (``entries=False`` leaves the entries out)."""
        return _to_json(self, entries)


def analyze(
    files: Sequence[CrontabFile],
    *,
    now: datetime,
    next_count: int = 3,
    durations: Mapping[str, float] | None = None,
    default_tz: str = "UTC",
) -> Report:
    """Run every rule over every job line, classify, plan, and compute the next runs."""
    with gc_paused():
        return _analyze(files, now, next_count, durations, default_tz)


def _analyze(
    files: Sequence[CrontabFile],
    now: datetime,
    next_count: int,
    durations: Mapping[str, float] | None,
    default_tz: str,
) -> Report:
    ctx = Context(now=now)
    jobs: list[CronJob] = []
    own: list[list[Finding]] = []  # per job: syntax warnings of its line, then rule findings
    in_order: list[list[Finding]] = []  # per line with findings, in file order (shared lists)
    names: Counter[str] = Counter()
    for crontab in files:
        for line in crontab.lines:
            syntax = (
                [parse_finding(line, p, crontab.host) for p in line.problems]
                if line.problems
                else []
            )
            if line.kind is not Kind.JOB:
                if syntax:
                    in_order.append(syntax)
                continue
            base = read_command(line.shell_command or "").name
            names[base] += 1
            name = base if names[base] == 1 else f"{base}-{names[base]}"
            jobs.append(make_job(line, crontab.host, default_tz, name))
            own.append(syntax)
            in_order.append(syntax)
    # A per-line rule sees the command text, the schedule and the timezone, nothing else: the
    # same command on the same schedule (copies across hosts, files, users) is checked once.
    seen: dict[tuple[str, str, str], list[tuple[Rule, Hit]]] = {}
    for job, found in zip(jobs, own, strict=True):
        key = (job.command.text, job.line.schedule or "", job.timezone)
        line_hits = seen.get(key)
        if line_hits is None:
            line_hits = seen[key] = _per_line_hits(job, ctx)
        for rule, hit in line_hits:
            found.append(rule.finding(job, hit))
    index_of = {id(job): i for i, job in enumerate(jobs)}
    for rule, hits in (
        (ORDERING, hidden_ordering(jobs)),
        (DUPLICATE, duplicates(jobs)),
        (DURATION, too_long(jobs, durations or {})),
    ):
        for job, hit in hits:
            own[index_of[id(job)]].append(rule.finding(job, hit))
    reports: list[JobReport] = []
    classifications: list[Classification] = []
    for job, found in zip(jobs, own, strict=True):
        verdict = classify(job, found)
        classifications.append(verdict)
        reports.append(
            JobReport(
                job=job,
                findings=tuple(found),
                classification=verdict,
                next_runs=_next_runs(job.line.schedule or "", job.timezone, now, next_count),
                description=_description(job),
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


def _per_line_hits(job: CronJob, ctx: Context) -> list[tuple[Rule, Hit]]:
    hits: list[tuple[Rule, Hit]] = []
    for rule in PER_LINE:
        hit = rule.check(job, ctx)  # type: ignore[misc]
        if hit is not None:
            hits.append((rule, hit))
    return hits


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


# -- JSON ----------------------------------------------------------------------------------


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _finding_json(f: Finding, located: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"rule": f.rule, "severity": str(f.severity)}
    if located:
        data.update(file=f.file, host=f.host, line=f.line, column=f.column, field=f.field)
    data.update(message=f.message, fix=f.fix)
    return data


@lru_cache(maxsize=65536)
def _verdict_json(verdict: Classification) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Recommendation, policy and four-sentences parts (shared between identical verdicts)."""
    return (
        {"action": str(verdict.recommendation), "reason": verdict.reason},
        {"name": str(verdict.policy), "reason": verdict.policy_reason},
        {
            "count": verdict.true_sentences,
            "should_move": verdict.should_move,
            "true": [s.id for s in verdict.sentences if s.true],
            "why": {s.id: s.why for s in verdict.sentences if s.true},
        },
    )


@lru_cache(maxsize=65536)
def _runs_json(runs: tuple[datetime, ...]) -> list[str]:
    return [_iso(t) for t in runs]


def _entry_json(r: JobReport) -> dict[str, Any]:
    job = r.job
    line = job.line
    recommendation, policy, sentences = _verdict_json(r.classification)
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
        "next_runs": _runs_json(r.next_runs),
        "findings": [_finding_json(f, located=False) for f in r.findings],
        "recommendation": recommendation,
        "policy": policy,
        "four_sentences": sentences,
    }


def _to_json(report: Report, with_entries: bool = True, with_plan: bool = True) -> dict[str, Any]:
    from migrate_cron import __version__
    from migrate_cron.analysis.classifier import SENTENCES

    entry_lines = {(r.job.host, r.job.line.file, r.job.line.number) for r in report.jobs}
    texts = {
        (c.host, line.file, line.number): line.text
        for c in report.files
        for line in c.lines
        if line.problems and line.kind is not Kind.JOB
    }
    other = []
    for f in report.findings:
        key = (f.host, f.file, f.line)
        if key in entry_lines:
            continue
        data = _finding_json(f, located=True)
        data["text"] = texts.get(key)
        other.append(data)
    severities = Counter(str(f.severity) for f in report.findings)
    actions = Counter(str(r.classification.recommendation) for r in report.jobs)
    rejected = sum(len(c.invalid) for c in report.files)
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
        "entries": [_entry_json(r) for r in report.jobs] if with_entries else [],
        "findings": other,
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
            for p in (report.plan if with_plan else ())
        ],
        "summary": {
            "files": len(report.files),
            "lines": sum(len(c.lines) for c in report.files),
            "jobs": len(report.jobs),
            "rejected": rejected,
            "findings": {s: severities.get(s, 0) for s in ("error", "warning", "info")},
            "recommendations": {
                a: actions.get(a, 0) for a in ("queue", "schedule+enqueue", "keep")
            },
            "should_move": sum(1 for r in report.jobs if r.classification.should_move),
        },
        "sentences": {key: text for key, text in SENTENCES},
        "rules": _rules_json(),
    }


@lru_cache(maxsize=1)
def _rules_json() -> dict[str, dict[str, str]]:
    return {
        rule.id: {"severity": str(rule.severity), "explanation": rule.explanation, "fix": rule.fix}
        for rule in (*PER_LINE, ORDERING, DUPLICATE, DURATION)
    }


# -- streaming JSON for big reports ----------------------------------------------------------
#
# Same document as ``to_json`` (a test holds them equal), written one entry per line. Parts that
# repeat across lines — schedule facts, env blocks, findings, verdicts — are encoded once and
# reused, so 100,000 entries cost string joins rather than 100,000 dict encodings.

_enc = json.encoder.encode_basestring


def _js(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return _enc(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_chunks(report: Report) -> Iterator[str]:
    """The ``--json`` document as text chunks (entries and plan items one per line)."""
    document = _to_json(report, with_entries=False, with_plan=False)
    yield "{\n"
    for key, value in document.items():
        if key in ("entries", "plan"):
            continue  # streamed below, one item per line
        yield f"{_enc(key)}:{_js(value)},\n"
    yield '"entries":[\n'
    env_cache: dict[int, str] = {}
    verdict_cache: dict[int, str] = {}
    first = True
    for r in report.jobs:
        yield ("" if first else ",\n") + _entry_text(r, env_cache, verdict_cache)
        first = False
    yield '\n],\n"plan":[\n'
    first = True
    for p in report.plan:
        yield ("" if first else ",\n") + _plan_text(p)
        first = False
    yield "\n]\n}\n"


def _entry_text(r: JobReport, env_cache: dict[int, str], verdict_cache: dict[int, str]) -> str:
    job = r.job
    line = job.line
    env = env_cache.get(id(line.env))
    if env is None:
        env = env_cache[id(line.env)] = _js(line.env)
    # Verdicts are shared objects (cached per signals); key by identity, hashing is costly.
    verdict = verdict_cache.get(id(r.classification))
    if verdict is None:
        verdict = verdict_cache[id(r.classification)] = _verdict_text(r.classification)
    command = line.command
    shell = line.shell_command
    return "".join(
        (
            "{",
            _where_text(line.file, job.host),
            str(line.number),
            ',"name":',
            _enc(job.name),
            ',"user":',
            _js(line.user),
            ",",
            _schedule_text(
                line.schedule or "",
                job.timezone,
                bool(line.timezone),
                r.description,
                round(job.cadence.runs_per_day, 4) if job.cadence else 0,
            ),
            '"command":',
            _js(command),
            ',"shell_command":',
            _js(shell),
            ',"stdin":',
            _js(line.stdin),
            ',"env":',
            env,
            ',"next_runs":',
            _next_text(r.next_runs),
            ',"findings":[',
            ",".join(_finding_text(f.rule, str(f.severity), f.message, f.fix) for f in r.findings),
            "],",
            verdict,
        )
    )


@lru_cache(maxsize=1024)
def _where_text(file: str, host: str | None) -> str:
    return f'"file":{_enc(file)},"host":{_js(host)},"line":'


@lru_cache(maxsize=65536)
def _schedule_text(
    schedule: str, timezone: str, from_file: bool, description: str, runs: float
) -> str:
    return (
        f'"schedule":{_enc(schedule)},"timezone":{_enc(timezone)},'
        f'"timezone_source":{_enc("CRON_TZ/TZ" if from_file else "default")},'
        f'"description":{_enc(description)},"runs_per_day":{_js(runs)},'
    )


@lru_cache(maxsize=65536)
def _next_text(runs: tuple[datetime, ...]) -> str:
    return _js(_runs_json(runs))


@lru_cache(maxsize=65536)
def _finding_text(rule: str, severity: str, message: str, fix: str) -> str:
    return _js({"rule": rule, "severity": severity, "message": message, "fix": fix})


def _verdict_text(verdict: Classification) -> str:
    recommendation, policy, sentences = _verdict_json(verdict)
    return (
        f'"recommendation":{_js(recommendation)},"policy":{_js(policy)},'
        f'"four_sentences":{_js(sentences)}}}'
    )


def _plan_text(p: PlanItem) -> str:
    return (
        f'{{"order":{p.order},{_where_text(p.file, p.host)}{p.line},'
        f'"name":{_enc(p.name)},"schedule":{_enc(p.schedule)},'
        f"{_plan_tail(p.category, p.reasons, p.recommendation, p.policy)}"
    )


@lru_cache(maxsize=65536)
def _plan_tail(category: str, reasons: tuple[str, ...], recommendation: str, policy: str) -> str:
    return (
        f'"category":{_enc(str(category))},"reasons":{_js(list(reasons))},'
        f'"recommendation":{_enc(recommendation)},"policy":{_enc(policy)}}}'
    )
