"""The order to migrate in: by pain, most expensive first.

1. ``lost-work`` — hand-overs (export, invoice, payment, mail, webhook, sync…) and jobs whose
   errors are swallowed: a single failure loses work today;
2. ``poller`` — every-few-minutes jobs: users wait, the database is polled while empty;
3. ``long-run`` — jobs that overlap (locks, durations longer than the interval) or can hang;
4. ``leave`` — the rest: cron is fine for them.

Each item says which words or findings put it in its category, so the order can be argued with.
The fields of :class:`PlanItem` are stable: ``migrate-cron plan`` and the JSON output use them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from migrate_cron.analysis.classifier import Classification, classify
from migrate_cron.analysis.finding import Finding, RuleId
from migrate_cron.analysis.job import CronJob


class Category(StrEnum):
    LOST_WORK = "lost-work"
    POLLER = "poller"
    LONG_RUN = "long-run"
    LEAVE = "leave"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK: dict[Category, int] = {c: i for i, c in enumerate(Category)}


@dataclass(frozen=True, slots=True)
class PlanItem:
    order: int  # 1-based position in the plan
    file: str
    line: int
    host: str | None
    name: str
    schedule: str
    category: Category
    reasons: tuple[str, ...]
    recommendation: str
    policy: str

    @property
    def ref(self) -> str:
        """``host:file:line`` (or ``file:line``): identifies the crontab line."""
        return f"{self.host}:{self.file}:{self.line}" if self.host else f"{self.file}:{self.line}"


_LONG_RUN_RULES = (
    RuleId.LONGER_THAN_INTERVAL,
    RuleId.OVERLAP_LOCK,
    RuleId.HTTP_NO_TIMEOUT,
    RuleId.BATCH_LIMIT,
)


def plan(
    entries: Sequence[CronJob],
    findings: Sequence[Finding],
    classifications: Sequence[Classification] | None = None,
) -> list[PlanItem]:
    """Order jobs by pain. ``findings`` may contain findings of any line; each job uses its own.

    ``classifications`` (same order as ``entries``) avoids classifying twice when the caller
    already did; otherwise each job is classified here.
    """
    by_line: dict[tuple[str | None, str, int], list[Finding]] = {}
    for finding in findings:
        by_line.setdefault((finding.host, finding.file, finding.line), []).append(finding)
    own = [by_line.get((j.host, j.line.file, j.line.number), []) for j in entries]
    verdicts = (
        list(classifications)
        if classifications is not None
        else [classify(j, f) for j, f in zip(entries, own, strict=True)]
    )
    return plan_jobs(entries, own, verdicts)


def plan_jobs(
    entries: Sequence[CronJob],
    findings: Sequence[Sequence[Finding]],
    verdicts: Sequence[Classification],
) -> list[PlanItem]:
    """``plan`` with each job's findings and verdict already at hand (same order)."""
    ranked: list[tuple[tuple[object, ...], CronJob, Category, tuple[str, ...], Classification]] = []
    for job, own, verdict in zip(entries, findings, verdicts, strict=True):
        category, reasons = _categorise(job, own, verdict)
        runs = job.cadence.runs_per_day if job.cadence else 0.0
        key = (
            _RANK[category],
            -len(reasons),
            -runs,
            job.host or "",
            job.line.file,
            job.line.number,
        )
        ranked.append((key, job, category, reasons, verdict))
    ranked.sort(key=lambda item: item[0])
    return [
        PlanItem(
            order=i,
            file=job.line.file,
            line=job.line.number,
            host=job.host,
            name=job.name,
            schedule=job.line.schedule or "",
            category=category,
            reasons=reasons,
            # The members' own values, not str() of them: a new string per item otherwise.
            recommendation=verdict.recommendation.value,
            policy=verdict.policy.value,
        )
        for i, (_, job, category, reasons, verdict) in enumerate(ranked, start=1)
    ]


def _categorise(
    job: CronJob, findings: Sequence[Finding], verdict: Classification
) -> tuple[Category, tuple[str, ...]]:
    rules = [f.rule for f in findings]
    if job.is_reboot or RuleId.FRAMEWORK_SCHEDULER in rules:
        why = "@reboot: nothing to schedule" if job.is_reboot else "the framework's scheduler"
        return Category.LEAVE, (why,)
    lost: list[str] = []
    if verdict.handover:
        lost.append("hands over: " + ", ".join(verdict.handover))
    if RuleId.ERRORS_SWALLOWED in rules:
        lost.append("finding: errors-swallowed")
    if lost and RuleId.OUTPUT_DISCARDED in rules:
        lost.append("finding: output-discarded")
    if lost:
        return Category.LOST_WORK, tuple(lost)
    if RuleId.POLL in rules or verdict.recommendation == "queue":
        gap = job.cadence.typical_gap if job.cadence else None
        poll = [f"polls every {gap:g} min" if gap else "polls"]
        poll += [f"finding: {r}" for r in rules if r in (RuleId.BATCH_LIMIT, RuleId.OVERLAP_LOCK)]
        return Category.POLLER, tuple(poll)
    long_run = [f"finding: {r}" for r in rules if r in _LONG_RUN_RULES]
    if long_run:
        return Category.LONG_RUN, tuple(long_run)
    return Category.LEAVE, (verdict.reason,)
