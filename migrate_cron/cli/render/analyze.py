"""What ``analyze`` and ``explain`` print: Rich tables per file with the findings and their
fixes, Markdown for a ticket, and the JSON documents (big reports streamed one entry per line).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from migrate_cron.analysis.report_json import to_json
from migrate_cron.cli.render.escape import printable
from migrate_cron.cli.render.findings import SEVERITY_STYLE
from migrate_cron.cli.render.numbers import counted
from migrate_cron.crontab.timezone import zone

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.analysis.report import JobReport, Report
    from migrate_cron.cli.render.grid_layout import Cell, GridColumn, Paragraph, Row
    from migrate_cron.crontab.entry import CrontabFile


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
    from migrate_cron.crontab.gc_pause import gc_paused

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


def job_columns() -> tuple[GridColumn, ...]:
    # Built on call: importing rich (the grid's wrapping) would slow every --json run.
    from migrate_cron.cli.render.grid_layout import GridColumn

    return (
        GridColumn("Line", justify="right", style="dim"),
        GridColumn("Schedule"),
        GridColumn("Runs/day", justify="right"),
        GridColumn("Next run"),
        GridColumn("Command", fold=True, max_width=48),
        GridColumn("Findings", min_width=20),
        GridColumn("Do"),
    )


def job_rows(jobs: list[JobReport], ignored: bool, now: datetime | None = None) -> Iterator[Row]:
    """One file's jobs as table rows; built on demand (twice: measured, then printed), so a
    100,000-line crontab never holds its whole table in memory. Text from the file is shown
    escaped (``printable``); a next run in another year than ``now``'s shows its year."""
    for r in jobs:
        line = r.job.line
        description: Paragraph = ((r.description, "dim"),)
        if line.timezone:
            description += ((f" ({printable(line.timezone)})", "dim"),)
        nxt = (
            next_run(r.next_runs[0], r.job.timezone, now)
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
        # Whole, folded at the width: the end of a command (its redirection) matters most.
        shown: Paragraph = ((printable((line.command or "").strip()), ""),)
        if line.user:
            shown = ((f"{printable(line.user)}: ", "dim"), *shown)
        yield (
            (((str(line.number), ""),),),
            (((printable(line.schedule or ""), "bold"),), description),
            (((rate(r.job.cadence.runs_per_day if r.job.cadence else 0), ""),),),
            (((nxt, ""),),),
            (shown,),
            tuple(((f.rule, SEVERITY_STYLE[str(f.severity)]),) for f in r.findings),
            do,
        )


@lru_cache(maxsize=4096)  # runs are shared per schedule: a few hundred in 35,000 rows
def next_run(t: datetime, timezone: str, now: datetime | None) -> str:
    """``Sun 1 Mar 12:05`` in the job's zone; ``Tue 5 Jan 2027 03:00`` when the run falls in
    another year than ``now`` (there), so a yearly job's date is never read as this year's."""
    local = t.astimezone(zone(timezone))
    year = "" if now is not None and now.astimezone(local.tzinfo).year == local.year else " %Y"
    return local.strftime(f"%a {local.day} %b{year} %H:%M")


def render_terminal(report: Report) -> None:
    from rich.markup import escape

    from migrate_cron.cli.render.console import chosen_width, report_console
    from migrate_cron.cli.render.findings import print_findings
    from migrate_cron.cli.render.grid import write_grid

    console = report_console()
    # A width the user has (a terminal, or COLUMNS) gets stacked records when the table does
    # not fit, never a clipped "Do" column; the fixed 140 columns of a pipe keep the table.
    stack = chosen_width()
    by_file: dict[tuple[str | None, str], list[JobReport]] = {}
    for job in report.jobs:
        by_file.setdefault((job.job.host, job.job.line.file), []).append(job)
    for crontab in report.files:
        jobs = by_file.get((crontab.host, crontab.path), [])
        label = escape(printable(crontab.label))
        if not jobs:
            # No empty table: a sentence, and the file's own findings below with the rest.
            console.print(f"[bold]{label}[/bold] — {_no_jobs(crontab)}")
        else:
            title = f"{label} — {counted(len(jobs), 'job')}, {crontab.format} format"
            if crontab.ignored:
                title += " — CRON IGNORES THIS WHOLE FILE"
            rows = partial(job_rows, jobs, crontab.ignored, report.now)
            write_grid(console, title, job_columns(), rows, stack_when_narrow=stack)
            console.print(f"[dim]{escape(printable(crontab.format_reason))}[/dim]")
            if crontab.format_inferred:
                console.print(
                    "[yellow]the format was inferred from the lines, not from the file's place: "
                    "pass --format user|system if it is wrong (migrate asks for it)[/yellow]"
                )
        console.print()
    document = to_json(report, with_entries=False, with_plan=False)
    rules = {rule: facts["explanation"] for rule, facts in document["rules"].items()}
    print_findings(console, report.findings, rules)
    _print_summary(console, report, document["summary"])


def _no_jobs(crontab: CrontabFile) -> str:
    """The sentence for a file without a job line (instead of an empty table)."""
    if crontab.ignored:
        return "no job lines: CRON IGNORES THIS WHOLE FILE (see the findings)"
    if not crontab.lines:
        return "an empty file: no job lines"
    total = len(crontab.lines)
    rejected = len(crontab.invalid)
    if rejected:
        return (
            f"no job lines: cron rejects {rejected:,} of its {counted(total, 'line')} "
            "(see the findings)"
        )
    return f"no job lines (only comments, settings or blank lines: {counted(total, 'line')})"


def _print_summary(console: Console, report: Report, data: dict[str, Any]) -> None:
    from rich.markup import escape

    sev = data["findings"]
    rec = data["recommendations"]
    console.print(
        f"[bold]Summary[/bold]: {counted(data['files'], 'file')}, "
        f"{counted(data['jobs'], 'job')}, {counted(data['rejected'], 'rejected line')}; "
        f"{counted(sum(sev.values()), 'finding')}: [red]{counted(sev['error'], 'error')}"
        f"[/red], [yellow]{counted(sev['warning'], 'warning')}[/yellow], "
        f"[cyan]{sev['info']:,} info[/cyan]"
    )
    console.print(
        f"Recommend: [magenta]{counted(rec['queue'], 'job')} to queue[/magenta], "
        f"[blue]{rec['schedule+enqueue']:,} to schedule+enqueue[/blue], "
        f"[green]{rec['keep']:,} to keep on cron[/green]; "
        f"{counted(data['should_move'], 'line')} with 2+ of the four sentences true "
        "should move."
    )
    from migrate_cron.analysis.classifier import MIGRATE_TO, SENTENCES

    for action, (_, meaning) in MIGRATE_TO.items():
        if rec[str(action)]:
            console.print(f"[dim]  {action}: {escape(meaning)}[/dim]")
    if data["should_move"]:
        said = "; ".join(text.rstrip(".").lower() for _, text in SENTENCES)
        console.print(
            f"[dim]  The four sentences (a line's N/4): {escape(said)}. Two or more true: "
            "the line should move off cron.[/dim]"
        )
    first = [p for p in report.plan if p.category != "leave"][:3]
    if first:
        names = ", ".join(f"{p.name} ({p.ref}, {p.category})" for p in first)
        console.print(f"Migrate first: {escape(printable(names))}")
    from migrate_cron.crontab.flavour import flavour

    cron = flavour(report.cron)
    zones = "unless a file sets CRON_TZ" if cron.cron_tz else "CRON_TZ and TZ never move them"
    console.print(
        f"[dim]Read as {cron.label} reads them. Times in {report.default_tz} (the daemon's "
        f"zone; {zones}); next runs after {iso_z(report.now)}.[/dim]"
    )


def render_markdown(report: Report) -> str:
    from migrate_cron.cli.render.findings import kinds, where

    out: list[str] = ["# Crontab analysis", ""]
    document = to_json(report, with_entries=False, with_plan=False)
    summary = document["summary"]
    sev = summary["findings"]
    out.append(
        f"{counted(summary['files'], 'file')}, {counted(summary['jobs'], 'job')}, "
        f"{counted(summary['rejected'], 'rejected line')}. "
        f"{counted(sum(sev.values()), 'finding')}: {counted(sev['error'], 'error')}, "
        f"{counted(sev['warning'], 'warning')}, {sev['info']:,} info. "
        f"Next runs after {iso_z(report.now)}; default timezone {report.default_tz}."
    )
    out.append("")
    for crontab in report.files:
        jobs = [
            r for r in report.jobs if (r.job.host, r.job.line.file) == (crontab.host, crontab.path)
        ]
        out += [f"## `{_md(crontab.label)}`", ""]
        if not jobs:
            out += [_no_jobs(crontab) + ".", ""]
            continue
        out += [f"_{crontab.format_reason}_", ""]
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
                f"`{_md((line.command or '').strip())}` | {findings} | {rec} |"
            )
        out.append("")
    if report.findings:
        out += ["## Findings", ""]
        rules = {rule: facts["explanation"] for rule, facts in document["rules"].items()}
        here = os.getcwd() + os.sep
        for kind in kinds(report.findings, rules):
            out += [f"### {kind.severity} `{kind.rule}` — {_md(where(kind.findings, here))}", ""]
            if kind.explanation:
                out += [f"_{_md(kind.explanation)}_", ""]
            several = len({(f.host, f.file) for f in kind.findings}) > 1
            for remedy in kind.remedies:
                for entry in remedy.entries:
                    at = where(entry.findings, here, with_file=several)
                    out.append(f"- {_md(at)}: {_md(entry.message)}")
                out += ["", f"Fix: {_md(remedy.fix)}", ""]
    moving = [p for p in report.plan if p.category != "leave"]
    if moving:
        out += ["## Migration order", ""]
        for p in moving:
            out.append(
                f"{p.order}. `{_md(p.name)}` ({_md(p.ref)}) — {p.category}: "
                f"{_md('; '.join(p.reasons))} → {p.recommendation}, missed runs: {p.policy}"
            )
        out.append("")
    return "\n".join(out)


def _md(text: str) -> str:
    return printable(text.replace("|", "\\|").replace("\n", " "))
