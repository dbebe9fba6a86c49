"""What the analysis says about each crontab line, as generation uses it: the line's name,
its missed-run policy, a comment for its entry, whether it guards itself with a lock, and
its errors (a line that never worked as written), one sentence each."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_cron.analysis.finding import RuleId
from migrate_cron.crontab.entry import Severity
from migrate_cron.vocabulary import Policy

if TYPE_CHECKING:
    from migrate_cron.analysis.report import JobReport, Report


@dataclass(frozen=True)
class Advice:
    """What the analysis says about one line: its readable name, the suggested missed-run
    policy and a comment for the registry entry."""

    name: str = "job"
    policy: Policy = Policy.SKIP
    note: str = ""
    #: The line guards itself with a lock wrapper (flock -n …): one run at a time, skip
    #: a slot while one runs — what the registry's concurrency/overlap now give.
    locked: bool = False
    #: The analysis's errors on the line, one sentence each: it never worked as written.
    errors: tuple[str, ...] = ()


def advice_for(report: Report) -> dict[tuple[str | None, str, int], Advice]:
    """What the analysis says about each job line, by (host, absolute file, line number)."""
    from migrate_cron.migration.planning import STEPS

    steps = {(p.host, p.file, p.line): p for p in report.plan}
    resolved = cache(lambda file: str(Path(file).resolve()))  # once per file, not per line
    advice: dict[tuple[str | None, str, int], Advice] = {}
    for r in report.jobs:
        line = r.job.line
        item = steps.get((r.job.host, line.file, line.number))
        verdict = r.classification
        note = f"{r.job.host}:" if r.job.host else ""
        note += f"{line.file}:{line.number}"
        if item is not None:
            step, title = STEPS.get(str(item.category), (4, str(item.category)))
            note += f" — plan step {step} ({title}): {'; '.join(item.reasons)}"
        note += f"\npolicy {verdict.policy}: {verdict.policy_reason}"
        advice[(r.job.host, resolved(line.file), line.number)] = Advice(
            name=r.job.name,
            policy=verdict.policy,
            note=note,
            locked=any(f.rule == RuleId.OVERLAP_LOCK for f in r.findings),
            errors=line_errors(r),
        )
    return advice


def line_errors(report: JobReport) -> tuple[str, ...]:
    """The analysis's errors on one job line, one sentence each. A command that ends with a
    backslash counts even when no rule reports it yet: cron has no line continuation, so the
    next line never was part of it (and the shell gets a stray backslash)."""
    errors = tuple(one_sentence(f.message) for f in report.findings if f.severity is Severity.ERROR)
    command = report.job.line.shell_command or ""
    if not errors and _continued(command):
        errors = (
            "the command ends with a backslash, but cron has no line continuation: the next "
            "line is not part of it, and the shell gets a literal \\ as its last word",
        )
    return errors


def _continued(command: str) -> bool:
    """Whether ``command`` ends with an unescaped backslash (blanks after it ignored)."""
    text = command.rstrip(" \t")
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def one_sentence(message: str) -> str:
    """The first sentence of a finding's message, on one line, without its final period."""
    text = " ".join(message.split())
    end = _SENTENCE_END.search(text)
    if end is not None:
        text = text[: end.start()]
    return text.rstrip(".")
