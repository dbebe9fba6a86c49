"""The documented ``analyze --json`` document (docs/analyze-json.md, ``schema_version`` 1:
fields are only ever added within a version), whole (``to_json``) or streamed one entry per
line for big reports (``json_chunks``, the same document byte for byte once parsed).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from migrate_cron.analysis.classifier import MIGRATE_TO, Classification
from migrate_cron.analysis.cross_rules import (
    DUPLICATE,
    DURATION,
    ORDERING,
)
from migrate_cron.analysis.finding import Finding
from migrate_cron.analysis.planner import PlanItem
from migrate_cron.analysis.report import JobReport, Report
from migrate_cron.analysis.rules import PER_LINE
from migrate_cron.crontab.entry import Kind

SCHEMA_VERSION = 1


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
        {
            "action": str(verdict.recommendation),
            "reason": verdict.reason,
            "migrate_to": list(MIGRATE_TO[verdict.recommendation][0]),
        },
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


def to_json(report: Report, with_entries: bool = True, with_plan: bool = True) -> dict[str, Any]:
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
    # Per file, once: each count walks every line (100,000 in a big file).
    counts = {id(c): (len(c.jobs), len(c.invalid)) for c in report.files}
    rejected = sum(invalid for _, invalid in counts.values())
    # Verdicts are shared objects (cached per signals): ask each once whether it should move.
    moving: dict[int, bool] = {}
    for r in report.jobs:
        verdict = r.classification
        if id(verdict) not in moving:
            moving[id(verdict)] = verdict.should_move
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": f"migrate-cron {__version__}",
        "now": _iso(report.now),
        "next": report.next_count,
        "default_timezone": report.default_tz,
        "cron": report.cron,
        "files": [
            {
                "path": c.path,
                "host": c.host,
                "format": c.format,
                "format_reason": c.format_reason,
                "lines": len(c.lines),
                "jobs": counts[id(c)][0],
                "rejected": counts[id(c)][1],
                "final_newline": not c.lines or c.lines[-1].raw.endswith("\n"),
                "ignored": c.ignored,
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
            "should_move": sum(1 for r in report.jobs if moving[id(r.classification)]),
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
    document = to_json(report, with_entries=False, with_plan=False)
    yield "{\n"
    for key, value in document.items():
        if key in ("entries", "plan"):
            continue  # streamed below, one item per line
        yield f"{_enc(key)}:{_js(value)},\n"
    yield '"entries":[\n'
    env_cache: dict[int, str] = {}
    verdict_cache: dict[int, str] = {}
    runs_cache: dict[int, str] = {}
    first = True
    for r in report.jobs:
        yield ("" if first else ",\n") + _entry_text(r, env_cache, verdict_cache, runs_cache)
        first = False
    yield '\n],\n"plan":[\n'
    first = True
    for p in report.plan:
        yield ("" if first else ",\n") + _plan_text(p)
        first = False
    yield "\n]\n}\n"


def _entry_text(
    r: JobReport,
    env_cache: dict[int, str],
    verdict_cache: dict[int, str],
    runs_cache: dict[int, str],
) -> str:
    job = r.job
    line = job.line
    env = env_cache.get(id(line.env))
    if env is None:
        env = env_cache[id(line.env)] = _js(line.env)
    # Next runs are shared per schedule too; hashing aware datetimes asks for their offsets.
    runs = runs_cache.get(id(r.next_runs))
    if runs is None:
        runs = runs_cache[id(r.next_runs)] = _next_text(r.next_runs)
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
            runs,
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
