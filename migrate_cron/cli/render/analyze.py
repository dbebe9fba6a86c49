"""What ``analyze`` and ``explain`` print: Rich tables per file with the findings and their
fixes, Markdown for a ticket, and the JSON documents (big reports streamed one entry per line).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from migrate_cron.analysis.report_json import to_json
from migrate_cron.crontab.timezone import zone

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.analysis.report import JobReport, Report
    from migrate_cron.cli.render.grid import Cell, GridColumn, Paragraph, Row


_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_ACTION_STYLE = {"queue": "bold magenta", "schedule+enqueue": "bold blue", "keep": "green"}


def write_json(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False))
    sys.stdout.write("\n")


def write_report_json(report: Report) -> None:
    """Small reports fully indented; big ones streamed one entry per line (fast, greppable)."""
    if len(report.jobs) <= 200:
        write_json(to_json(report))
        return
    from migrate_cron.analysis.report_json import json_chunks
    from migrate_cron.crontab.parser import gc_paused

    with gc_paused():
        sys.stdout.writelines(json_chunks(report))


def iso_z(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def rate(per_day: float) -> str:
    if per_day >= 1:
        return f"{per_day:,.4g}"
    if per_day == 0:
        return "-"
    return f"{per_day:.2g}"


def _stdout_console() -> Console:
    """A terminal's own width; piped, the width COLUMNS asks for, else a fixed 140 columns
    (a stable layout for pipes and files; scripts use --json)."""
    import os

    from rich.console import Console

    chosen = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
    return Console(highlight=False, width=None if chosen else 140)


def job_columns() -> tuple[GridColumn, ...]:
    # Built on call: importing rich (the grid's wrapping) would slow every --json run.
    from migrate_cron.cli.render.grid import GridColumn

    return (
        GridColumn("Line", justify="right", style="dim"),
        GridColumn("Schedule"),
        GridColumn("Runs/day", justify="right"),
        GridColumn("Next run"),
        GridColumn("Command", fold=True, max_width=48),
        GridColumn("Findings", min_width=20),
        GridColumn("Do"),
    )


def job_rows(jobs: list[JobReport], ignored: bool) -> Iterator[Row]:
    """One file's jobs as table rows; built on demand (twice: measured, then printed), so a
    100,000-line crontab never holds its whole table in memory."""
    for r in jobs:
        line = r.job.line
        description: Paragraph = ((r.description, "dim"),)
        if line.timezone:
            description += ((f" ({line.timezone})", "dim"),)
        nxt = (
            r.next_runs[0].astimezone(zone(r.job.timezone)).strftime("%a %m-%d %H:%M")
            if r.next_runs
            else "never: file ignored"
            if ignored
            else "at boot"
        )
        verdict = r.classification
        action = str(verdict.recommendation)
        do: Cell = (
            ((action, _ACTION_STYLE[action]),),
            ((f"missed: {verdict.policy}", "dim"),),
        )
        if verdict.should_move:
            do += (((f"{verdict.true_sentences}/4 sentences", "bold"),),)
        command = (line.command or "").strip()
        shown: Paragraph = ((command if len(command) < 200 else command[:197] + "…", ""),)
        if line.user:
            shown = ((f"{line.user}: ", "dim"), *shown)
        yield (
            (((str(line.number), ""),),),
            (((line.schedule or "", "bold"),), description),
            (((rate(r.job.cadence.runs_per_day if r.job.cadence else 0), ""),),),
            (((nxt, ""),),),
            (shown,),
            tuple(((f.rule, _SEVERITY_STYLE[str(f.severity)]),) for f in r.findings),
            do,
        )


def render_terminal(report: Report) -> None:
    import os

    from migrate_cron.cli.render.grid import write_grid

    console = _stdout_console()
    # A width the user has (a terminal, or COLUMNS) gets stacked records when the table does
    # not fit, never a clipped "Do" column; the fixed 140 columns of a pipe keep the table.
    stack = console.is_terminal or os.environ.get("COLUMNS", "").isdigit()
    by_file: dict[tuple[str | None, str], list[JobReport]] = {}
    for job in report.jobs:
        by_file.setdefault((job.job.host, job.job.line.file), []).append(job)
    for crontab in report.files:
        jobs = by_file.get((crontab.host, crontab.path), [])
        title = f"{crontab.label} — {len(jobs)} jobs, {crontab.format} format"
        if crontab.ignored:
            title += " — CRON IGNORES THIS WHOLE FILE"
        rows = partial(job_rows, jobs, crontab.ignored)
        write_grid(console, title, job_columns(), rows, stack_when_narrow=stack)
        console.print(f"[dim]{crontab.format_reason}[/dim]")
        if crontab.format_inferred:
            console.print(
                "[yellow]the format was inferred from the lines, not from the file's place: "
                "pass --format user|system if it is wrong (migrate asks for it)[/yellow]"
            )
        console.print()
    _print_findings(console, report)
    _print_summary(console, report)


def _print_findings(console: Console, report: Report) -> None:
    from rich.table import Table
    from rich.text import Text

    if not report.findings:
        console.print("[green]No findings.[/green]")
        return
    console.print("[bold]Findings[/bold] — what to do")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    # Folded, never cut: a location longer than the column keeps its line number.
    grid.add_column(overflow="fold")
    here = os.getcwd() + os.sep
    for f in report.findings[:300]:
        style = _SEVERITY_STYLE[str(f.severity)]
        body = Text()
        # Under the current directory, relative (as a compiler shows what it was given).
        shown = replace(f, file=f.file[len(here) :]) if f.file.startswith(here) else f
        body.append(shown.location, style="bold")
        body.append(f" {f.rule}", style=style)
        body.append(f"  {f.message}\n")
        body.append("fix: ", style="bold green")
        body.append(f.fix)
        grid.add_row(Text(str(f.severity), style=style), body)
    console.print(grid)
    if len(report.findings) > 300:
        console.print(f"[dim]… {len(report.findings) - 300} more findings (use --json)[/dim]")
    console.print()


def _print_summary(console: Console, report: Report) -> None:
    data = to_json(report)["summary"] if len(report.jobs) < 5000 else _quick_summary(report)
    sev = data["findings"]
    rec = data["recommendations"]
    console.print(
        f"[bold]Summary[/bold]: {data['files']} file(s), {data['jobs']} jobs, "
        f"{data['rejected']} rejected line(s); findings: [red]{sev['error']} error[/red], "
        f"[yellow]{sev['warning']} warning[/yellow], [cyan]{sev['info']} info[/cyan]"
    )
    console.print(
        f"Recommend: [magenta]{rec['queue']} queue[/magenta], "
        f"[blue]{rec['schedule+enqueue']} schedule+enqueue[/blue], "
        f"[green]{rec['keep']} keep[/green]; {data['should_move']} line(s) with 2+ of the "
        "four sentences true should move."
    )
    first = [p for p in report.plan if p.category != "leave"][:3]
    if first:
        names = ", ".join(f"{p.name} ({p.ref}, {p.category})" for p in first)
        console.print(f"Migrate first: {names}")
    from migrate_cron.crontab.flavour import flavour

    cron = flavour(report.cron)
    zones = "unless a file sets CRON_TZ" if cron.cron_tz else "CRON_TZ and TZ never move them"
    console.print(
        f"[dim]Read as {cron.label} reads them. Times in {report.default_tz} (the daemon's "
        f"zone; {zones}); next runs after {iso_z(report.now)}.[/dim]"
    )


def _quick_summary(report: Report) -> dict[str, Any]:
    from collections import Counter

    severities = Counter(str(f.severity) for f in report.findings)
    actions = Counter(str(r.classification.recommendation) for r in report.jobs)
    return {
        "files": len(report.files),
        "jobs": len(report.jobs),
        "rejected": sum(len(c.invalid) for c in report.files),
        "findings": {s: severities.get(s, 0) for s in ("error", "warning", "info")},
        "recommendations": {a: actions.get(a, 0) for a in ("queue", "schedule+enqueue", "keep")},
        "should_move": sum(1 for r in report.jobs if r.classification.should_move),
    }


def render_markdown(report: Report) -> str:
    out: list[str] = ["# Crontab analysis", ""]
    summary = to_json(report)["summary"]
    out.append(
        f"{summary['files']} file(s), {summary['jobs']} jobs, {summary['rejected']} rejected "
        f"line(s). Findings: {summary['findings']['error']} error, "
        f"{summary['findings']['warning']} warning, {summary['findings']['info']} info. "
        f"Next runs after {iso_z(report.now)}; default timezone {report.default_tz}."
    )
    out.append("")
    for crontab in report.files:
        jobs = [
            r for r in report.jobs if (r.job.host, r.job.line.file) == (crontab.host, crontab.path)
        ]
        out += [f"## `{crontab.label}`", "", f"_{crontab.format_reason}_", ""]
        out.append(
            "| Line | Schedule | Runs/day | Next run | Command | Findings | Recommendation |"
        )
        out.append("|---:|---|---:|---|---|---|---|")
        for r in jobs:
            line = r.job.line
            nxt = (
                iso_z(r.next_runs[0])
                if r.next_runs
                else "never: file ignored"
                if crontab.ignored
                else "at boot"
            )
            findings = ", ".join(f"`{f.rule}`" for f in r.findings) or "—"
            rec = f"**{r.classification.recommendation}** (missed: {r.classification.policy})"
            out.append(
                f"| {line.number} | `{_md(line.schedule or '')}` {r.description} | "
                f"{rate(r.job.cadence.runs_per_day if r.job.cadence else 0)} | {nxt} | "
                f"`{_md((line.command or '').strip()[:80])}` | {findings} | {rec} |"
            )
        out.append("")
    if report.findings:
        out += ["## Findings", ""]
        for f in report.findings:
            out.append(f"- **{f.severity}** `{f.location}` `{f.rule}`: {_md(f.message)}  ")
            out.append(f"  Fix: {_md(f.fix)}")
        out.append("")
    moving = [p for p in report.plan if p.category != "leave"]
    if moving:
        out += ["## Migration order", ""]
        for p in moving:
            out.append(
                f"{p.order}. `{p.name}` ({p.ref}) — {p.category}: {'; '.join(p.reasons)} → "
                f"{p.recommendation}, missed runs: {p.policy}"
            )
        out.append("")
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
