"""The findings of ``analyze`` as a person reads them: one paragraph per kind of finding.

A rule that fires on forty lines says why it matters and what to do once, then lists its lines
("lines 3, 5, 9-12"); what differs per line (the message, which quotes the line) stays per
line, and lines with the same message share one entry. A fix that a line overrides is printed
with the lines it belongs to. Kinds come worst first (errors, warnings, info), then in the order
the files show them; the JSON output keeps one finding per line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from migrate_cron.cli.render.escape import printable
from migrate_cron.cli.render.numbers import counted, numbered

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.analysis.finding import Finding
    from migrate_cron.crontab.entry import Severity

#: Entries (distinct messages) printed per kind; the rest is counted (``--json`` has them all).
ENTRIES_PER_KIND = 12

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


@dataclass(frozen=True)
class Entry:
    """Lines of one kind that say the same thing."""

    findings: tuple[Finding, ...]
    message: str


@dataclass(frozen=True)
class Remedy:
    """One fix and the entries it applies to (a kind has one, unless a line overrides it)."""

    fix: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class FindingKind:
    """Every finding of one rule: said once, with its lines."""

    rule: str
    severity: Severity
    explanation: str | None
    findings: tuple[Finding, ...]
    remedies: tuple[Remedy, ...]

    @property
    def said_once(self) -> bool:
        """Every line of the kind says the same thing (one entry)."""
        return len(self.remedies) == 1 and len(self.remedies[0].entries) == 1


def kinds(findings: Iterable[Finding], explanations: Mapping[str, str]) -> list[FindingKind]:
    """Group ``findings`` (in file/line order) by rule, worst severity first."""
    by_rule: dict[tuple[str, Severity], list[Finding]] = {}
    for f in findings:
        by_rule.setdefault((f.rule, f.severity), []).append(f)
    out = []
    for (rule, severity), group in by_rule.items():
        by_fix: dict[str, dict[str, list[Finding]]] = {}
        for f in group:
            by_fix.setdefault(f.fix, {}).setdefault(f.message, []).append(f)
        remedies = tuple(
            Remedy(fix, tuple(Entry(tuple(fs), message) for message, fs in messages.items()))
            for fix, messages in by_fix.items()
        )
        out.append(FindingKind(rule, severity, explanations.get(rule), tuple(group), remedies))
    out.sort(key=lambda k: -k.severity.rank)  # stable: file order within a severity
    return out


def where(findings: Sequence[Finding], here: str, with_file: bool = True) -> str:
    """The lines of ``findings`` per file: "shop.crontab lines 9, 12; web2:app line 3" (a file
    under ``here`` relative to it; a whole-file finding is "the whole file")."""
    places: dict[tuple[str | None, str], set[int]] = {}
    for f in findings:
        places.setdefault((f.host, f.file), set()).add(f.line)
    parts = []
    for (host, file), lines in places.items():
        shown = file[len(here) :] if here and file.startswith(here) else file
        label = printable(f"{host}:{shown}" if host else shown)
        numbers = lines - {0}
        said = [numbered("line", numbers)] if numbers else []
        if 0 in lines:
            said.insert(0, "the whole file")
        text = " and ".join(said)
        parts.append(f"{label} {text}" if with_file else text)
    return "; ".join(parts)


def print_findings(console: Console, findings: Sequence[Finding], rules: Mapping[str, str]) -> None:
    """The "Findings — what to do" section: one paragraph per kind (``rules``: rule id to its
    explanation)."""
    from rich.table import Table
    from rich.text import Text

    if not findings:
        console.print("[green]No findings.[/green]")
        return
    found = kinds(findings, rules)
    console.print(
        f"[bold]Findings[/bold] — what to do: {counted(len(findings), 'finding')} "
        f"of {counted(len(found), 'kind')}"
    )
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    # Folded, never cut: a location longer than the column keeps its line numbers.
    grid.add_column(overflow="fold")
    # Under the current directory, relative (as a compiler shows what it was given).
    here = os.getcwd() + os.sep
    for kind in found:
        style = SEVERITY_STYLE.get(str(kind.severity), "")
        body = Text()
        body.append(printable(kind.rule), style=f"bold {style}")
        body.append(" — ")
        body.append(where(kind.findings, here), style="bold")
        if kind.explanation:
            body.append(f"\n{printable(kind.explanation)}", style="italic")
        several = len({(f.host, f.file) for f in kind.findings}) > 1
        budget = ENTRIES_PER_KIND
        for remedy in kind.remedies:
            entries = remedy.entries[:budget]
            if not entries:
                break
            budget -= len(entries)
            for entry in entries:
                body.append("\n")
                if not kind.said_once:  # else the heading's lines are the entry's
                    body.append(where(entry.findings, here, with_file=several), style="bold")
                    body.append(": ")
                body.append(printable(entry.message))
            body.append("\nfix: ", style="bold green")
            body.append(printable(remedy.fix))
        hidden = len(kind.findings) - _shown(kind)
        if hidden:
            body.append(f"\n… {counted(hidden, 'more line')} (use --json)", style="dim")
        grid.add_row(Text(str(kind.severity), style=style), body)
        grid.add_row("", "")
    console.print(grid)


def _shown(kind: FindingKind) -> int:
    """Findings under the first ``ENTRIES_PER_KIND`` entries (the ones printed)."""
    entries = [e for r in kind.remedies for e in r.entries][:ENTRIES_PER_KIND]
    return sum(len(e.findings) for e in entries)
