"""The migration plan as the team reads it: four steps, ordered by pain, each with its reason.

The order and the reasons come from ``migrate_cron.analysis`` (the planner). This module maps its
categories onto the four steps of the migration and says, per line, what the next command is:

1. lost work hurts most — hand-overs to third parties: switch first;
2. pollers — every few minutes: switch, then enqueue from the code where the work appears;
3. long runs — split into a producer that enqueues plus many small jobs;
4. keep on cron — cron is right for it (and the reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.vocabulary import Policy

if TYPE_CHECKING:
    from migrate_cron.analysis.report import Report

STEPS = {
    "lost-work": (1, "lost work hurts most"),
    "poller": (2, "polls every few minutes"),
    "long-run": (
        3,
        "long run: split into a producer + small jobs (enqueue KIND --stdin, docs/fan-out.md)",
    ),
    "leave": (4, "keep on cron"),
}


@dataclass(frozen=True)
class PlanRow:
    order: int
    step: int
    title: str
    file: str
    line: int
    host: str | None
    text: str
    name: str
    schedule: str
    reasons: tuple[str, ...]
    recommendation: str
    policy: Policy
    registry_name: str | None = None
    #: ``--format user|system`` for ``migrate`` when the file's place does not say it.
    format_hint: str | None = None

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    @property
    def job(self) -> str:
        return self.registry_name or self.name

    @property
    def where(self) -> str:
        """The file as commands take it: ``HOST:PATH`` for another host's crontab."""
        return f"{self.host}:{self.file}" if self.host else self.file

    @property
    def next_command(self) -> str:
        if self.step >= 4:
            return "-"
        hint = f" --format {self.format_hint}" if self.format_hint else ""
        return f"migrate-cron migrate {self.job} --to enqueue --crontab {self.where}{hint}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "step": self.step,
            "title": self.title,
            "file": self.file,
            "host": self.host,
            "line": self.line,
            "text": self.text,
            "name": self.name,
            "registry_name": self.registry_name,
            "schedule": self.schedule,
            "reasons": list(self.reasons),
            "recommendation": self.recommendation,
            "policy": self.policy,
            "next": self.next_command if self.step < 4 else None,
        }


def analyze_files(
    paths: Sequence[str | Path],
    now: datetime | None = None,
    default_tz: str | None = None,
    file_format: str = "auto",
    cron: str = "debian",
) -> Report:
    """Read and analyze crontab files, each a path or ``HOST:PATH``, as ``cron`` reads them
    (unreadable files are usage errors)."""
    from datetime import UTC

    from migrate_cron.analysis.report import analyze
    from migrate_cron.crontab.sources import load_origins
    from migrate_cron.crontab.timezone import host_timezone

    files = load_origins(paths, file_format, cron)
    return analyze(
        files, now=now or datetime.now(UTC), default_tz=default_tz or host_timezone(), cron=cron
    )


def plan_rows(report: Report) -> list[PlanRow]:
    text = {(line.file, line.number): line.text for f in report.files for line in f.lines}
    inferred = {f.path: f.format for f in report.files if f.format_inferred}
    rows = []
    for item in report.plan:
        step, title = STEPS.get(str(item.category), (4, str(item.category)))
        rows.append(
            PlanRow(
                order=item.order,
                step=step,
                title=title,
                file=item.file,
                line=item.line,
                host=item.host,
                text=text.get((item.file, item.line), ""),
                name=item.name,
                schedule=item.schedule,
                reasons=item.reasons,
                recommendation=item.recommendation,
                policy=Policy(item.policy),
                format_hint=inferred.get(item.file),
            )
        )
    return rows


def plan_files(paths: Sequence[str | Path]) -> list[PlanRow]:
    return plan_rows(analyze_files(paths))


def generate_command(report: Report, rows: Sequence[PlanRow], tz: str | None) -> tuple[str, str]:
    """The ``generate registry`` command that takes the planned lines, and when to run it as
    written. A line under a ``CRON_TZ`` its cron ignores runs in the daemon's zone, which the
    file does not say: without ``--tz`` generate refuses it, so the command carries ``--tz``
    (the one plan was given, else this host's zone, true when cron runs here)."""
    import shlex

    from migrate_cron.crontab.flavour import flavour
    from migrate_cron.migration.entry_zone import entry_zone
    from migrate_cron.registry.proposal import Refusal

    files = " ".join(shlex.quote(w) for w in dict.fromkeys(r.where for r in rows))
    command = f"migrate-cron generate registry {files}"
    if tz is not None:
        return f"{command} --tz {tz}", ""
    cron = flavour(report.cron)
    unsaid = any(
        isinstance(entry_zone(line, "", cron, report.default_tz, False), Refusal)
        for f in report.files
        for line in f.jobs
    )
    if not unsaid:
        return command, ""
    return (
        f"{command} --tz {report.default_tz}",
        f" (if cron runs on this host; {cron.label} ignores the file's CRON_TZ, so give "
        "--tz the zone its daemon runs in)",
    )
