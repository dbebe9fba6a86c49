"""``migrate-cron analyze`` and ``migrate-cron explain``.

``analyze`` reads crontab files (or stdin, or the whole system's crontabs), runs the analysis
and prints: a Rich table per file plus the findings with their fixes (default), the documented
JSON document (``--json``), or Markdown for a ticket (``--markdown``). Data goes to stdout;
warnings (skipped unreadable files under ``--system``) go to stderr. Exit 0; 1 when a finding
reaches ``--fail-on``; 2 for usage errors and unreadable files.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from migrate_cron.cli.common import JsonFlag, TzOption
from migrate_cron.crontab.timezone import check_zone, host_timezone
from migrate_cron.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.analysis.report import JobReport, Report
    from migrate_cron.crontab.entry import CrontabFile


class FailOn(StrEnum):
    info = "info"
    warning = "warning"
    error = "error"


class FileFormat(StrEnum):
    auto = "auto"
    user = "user"
    system = "system"


SYSTEM_FILES = ("/etc/crontab",)
SYSTEM_DIRS = ("/etc/cron.d",)
SPOOL_DIRS = ("/var/spool/cron/crontabs", "/var/spool/cron")
_HOST_PREFIX = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*):(.+)\Z")
# Debian cron (run-parts rules) ignores cron.d files whose names have other characters.
_CRON_D_NAME = re.compile(r"[A-Za-z0-9_-]+\Z")


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze_command)
    app.command("explain")(explain_command)


NowOption = Annotated[
    str | None,
    typer.Option(
        "--now", help="Compute next runs after this ISO time (default: now).", metavar="ISO"
    ),
]
NextOption = Annotated[
    int, typer.Option("--next", min=0, max=1000, help="How many next runs to show per job.")
]


def analyze_command(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="Crontab files; '-' reads stdin; 'HOST:PATH' labels a file with its host.",
            show_default=False,
        ),
    ] = None,
    system: Annotated[
        bool,
        typer.Option(
            "--system",
            help="Read /etc/crontab, /etc/cron.d/* and /var/spool/cron/crontabs/* "
            "(unreadable ones are skipped with a warning).",
        ),
    ] = False,
    file_format: Annotated[
        FileFormat,
        typer.Option(
            "--format",
            help="user: 'm h dom mon dow command'; system: a user field before the command; "
            "auto: decided per file (the output says which).",
        ),
    ] = FileFormat.auto,
    hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--host",
            help="Host label for the files, in order (repeat it); finds lines duplicated "
            "across hosts. Same as HOST:PATH.",
        ),
    ] = None,
    as_json: JsonFlag = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Markdown for a ticket or pull request.")
    ] = False,
    now: NowOption = None,
    next_count: NextOption = 3,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a finding has at least this severity (for CI).",
            case_sensitive=False,
        ),
    ] = None,
    durations: Annotated[
        Path | None,
        typer.Option(
            "--durations",
            help="CSV of name,seconds (job name, FILE:LINE or a word of the command): "
            "flags jobs that run longer than their interval.",
            metavar="FILE",
        ),
    ] = None,
    tz: TzOption = None,
) -> None:
    """Read crontabs exactly as cron does and say what to do with every line."""
    from migrate_cron.analysis.report import analyze, read_durations
    from migrate_cron.crontab.entry import Severity

    if as_json and markdown:
        raise UsageError("choose one of --json and --markdown")
    when = parse_now(now)
    zone = tz or host_timezone()
    check_zone(zone)
    crontabs = load_files(files or [], hosts or [], system, file_format.value)
    if not crontabs:
        raise UsageError("no crontab given: pass FILE…, '-' for stdin, or --system")
    timings = read_durations(_read_text(durations), str(durations)) if durations else None
    report = analyze(crontabs, now=when, next_count=next_count, durations=timings, default_tz=zone)
    if as_json:
        write_report_json(report)
    elif markdown:
        sys.stdout.write(render_markdown(report))
    else:
        render_terminal(report)
    if fail_on is not None and report.reaches(Severity(fail_on.value)):
        raise typer.Exit(1)


def explain_command(
    expr: Annotated[str, typer.Argument(help='A cron expression, e.g. "30 2 * * 1-5" or @daily.')],
    tz: Annotated[str, typer.Option("--tz", help="IANA timezone the schedule runs in.")] = "UTC",
    next_count: NextOption = 5,
    now: NowOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The expression in words and its next runs (same semantics as analyze)."""
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    when = parse_now(now)
    try:
        schedule = Schedule.parse(expr, tz, allow_reboot=True)
    except ScheduleError as exc:
        raise UsageError(f'"{expr}": {exc.reason}') from None
    runs = [] if schedule.is_reboot else schedule.next_runs(when, next_count)
    notes = day_rule_notes(schedule) + dst_notes(schedule, when)
    if as_json:
        write_json(
            {
                "schema_version": 1,
                "expression": schedule.expr,
                "timezone": tz,
                "description": schedule.describe(),
                "runs_per_day": round(schedule.runs_per_day(), 4),
                "fixed_time": (not schedule.is_reboot) and schedule.fixed_time,
                "now": _iso(when),
                "next_runs": [
                    {"utc": _iso(t), "local": t.astimezone(_zone(tz)).isoformat()} for t in runs
                ],
                "notes": notes,
            }
        )
        return
    rows: list[tuple[str, str]] = [
        ("Expression", schedule.expr),
        ("In words", schedule.describe()),
        ("Timezone", tz),
        ("Runs per day", _rate(schedule.runs_per_day())),
    ]
    for i, t in enumerate(runs):
        local = t.astimezone(_zone(tz))
        shown = local.strftime("%a %Y-%m-%d %H:%M %Z")
        if tz not in ("UTC", "Etc/UTC"):
            shown += f"  ({t.strftime('%H:%M')} UTC)"
        rows.append(("Next runs" if i == 0 else "", shown))
    rows += [("Note", note) for note in notes]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        sys.stdout.write(f"{label:>{width}}  {value}\n")


# -- input ---------------------------------------------------------------------------------


def load_files(
    args: list[str], hosts: list[str], system: bool, file_format: str
) -> list[CrontabFile]:
    from migrate_cron.crontab.parser import parse_crontab, read_crontab

    if len(hosts) > max(len(args), 1) and not system:
        raise UsageError(f"{len(hosts)} --host labels for {len(args)} files")
    crontabs: list[CrontabFile] = []
    for index, arg in enumerate(args):
        host = hosts[index] if index < len(hosts) else None
        path = arg
        if arg != "-" and not os.path.exists(arg):
            match = _HOST_PREFIX.match(arg)
            if match:
                host, path = match.group(1), match.group(2)
        if path == "-":
            data = sys.stdin.buffer.read()
            crontabs.append(parse_crontab(data, "-", format=file_format, host=host))
            continue
        if len(args) > 1 and os.path.isdir(path):
            _warn(f"skipped {path}: a directory")
            continue
        try:
            crontab = read_crontab(path, format=file_format, host=host)
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        reason = _not_a_crontab(crontab) if len(args) > 1 else None
        if reason:
            _warn(f"skipped {path}: {reason} (pass it alone to analyze it anyway)")
            continue
        crontabs.append(crontab)
    if system:
        crontabs.extend(_system_crontabs(file_format, hosts[0] if hosts else None))
    return crontabs


def _not_a_crontab(crontab: CrontabFile) -> str | None:
    """Why a file among many (``analyze dir/*``) is surely not a crontab, or None."""
    from migrate_cron.crontab.entry import Kind

    lines = crontab.lines
    if lines and lines[0].text.startswith("#!"):
        return "a script (it starts with #!), not a crontab"
    kinds = [line.kind for line in lines]
    invalid = kinds.count(Kind.INVALID)
    if (
        invalid
        and Kind.JOB not in kinds
        and Kind.ENV not in kinds
        and invalid * 2 >= len([k for k in kinds if k not in (Kind.BLANK, Kind.COMMENT)])
    ):
        return f"no job or NAME=value line, {invalid} line(s) cron would reject"
    return None


def _system_crontabs(file_format: str, host: str | None) -> list[CrontabFile]:
    from migrate_cron.crontab.parser import read_crontab

    found: list[tuple[str, str]] = [(p, "system") for p in SYSTEM_FILES if os.path.exists(p)]
    for directory in SYSTEM_DIRS:
        for path in sorted(glob.glob(os.path.join(directory, "*"))):
            if not os.path.isfile(path):
                continue
            if not _CRON_D_NAME.match(os.path.basename(path)):
                _warn(f"skipped {path}: cron ignores cron.d files whose names contain dots etc.")
                continue
            found.append((path, "system"))
    for directory in SPOOL_DIRS:
        if not os.path.isdir(directory):
            continue
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            _warn(f"skipped {directory}: {exc.strerror or exc} (run as root to include it)")
            continue
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                found.append((path, "user"))
        break
    crontabs: list[CrontabFile] = []
    for path, kind in found:
        try:
            chosen = kind if file_format == "auto" else file_format
            crontabs.append(read_crontab(path, format=chosen, host=host))
        except OSError as exc:
            _warn(f"skipped {path}: {exc.strerror or exc}")
    return crontabs


def _read_text(path: Path | None) -> str:
    assert path is not None
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def parse_now(value: str | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--now {value!r} is not an ISO time (e.g. 2026-03-01T12:00:00Z)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _zone(name: str) -> Any:
    from zoneinfo import ZoneInfo

    return UTC if name in ("UTC", "Etc/UTC") else ZoneInfo(name)


# -- output --------------------------------------------------------------------------------


def write_json(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False))
    sys.stdout.write("\n")


def write_report_json(report: Report) -> None:
    """Small reports fully indented; big ones streamed one entry per line (fast, greppable)."""
    if len(report.jobs) <= 200:
        write_json(report.to_json())
        return
    from migrate_cron.analysis.report import json_chunks
    from migrate_cron.crontab.parser import gc_paused

    with gc_paused():
        sys.stdout.writelines(json_chunks(report))


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _rate(per_day: float) -> str:
    if per_day >= 1:
        return f"{per_day:,.4g}"
    if per_day == 0:
        return "-"
    return f"{per_day:.2g}"


_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_ACTION_STYLE = {"queue": "bold magenta", "schedule+enqueue": "bold blue", "keep": "green"}


def _stdout_console() -> Console:
    from rich.console import Console

    return Console(highlight=False, width=None if sys.stdout.isatty() else 140)


def render_terminal(report: Report) -> None:
    from rich.table import Table
    from rich.text import Text

    console = _stdout_console()
    by_file: dict[tuple[str | None, str], list[JobReport]] = {}
    for job in report.jobs:
        by_file.setdefault((job.job.host, job.job.line.file), []).append(job)
    for crontab in report.files:
        jobs = by_file.get((crontab.host, crontab.path), [])
        title = f"{crontab.label} — {len(jobs)} jobs, {crontab.format} format"
        table = Table(title=title, title_justify="left", show_lines=False, expand=False)
        table.add_column("Line", justify="right", style="dim")
        table.add_column("Schedule")
        table.add_column("Runs/day", justify="right")
        table.add_column("Next run")
        table.add_column("Command", overflow="fold", max_width=48)
        table.add_column("Findings", min_width=20)
        table.add_column("Do")
        for r in jobs:
            line = r.job.line
            schedule = Text(line.schedule or "", style="bold")
            schedule.append(f"\n{r.description}", style="dim")
            if line.timezone:
                schedule.append(f" ({line.timezone})", style="dim")
            nxt = (
                r.next_runs[0].astimezone(_zone(r.job.timezone)).strftime("%a %m-%d %H:%M")
                if r.next_runs
                else "at boot"
            )
            findings = Text()
            for f in r.findings:
                if findings:
                    findings.append("\n")
                findings.append(f.rule, style=_SEVERITY_STYLE[str(f.severity)])
            verdict = r.classification
            action = Text(
                str(verdict.recommendation), style=_ACTION_STYLE[str(verdict.recommendation)]
            )
            action.append(f"\nmissed: {verdict.policy}", style="dim")
            if verdict.should_move:
                action.append(f"\n{verdict.true_sentences}/4 sentences", style="bold")
            command = (line.command or "").strip()
            shown = Text(f"{line.user}: ", style="dim") if line.user else Text()
            shown.append(command if len(command) < 200 else command[:197] + "…")
            table.add_row(
                str(line.number),
                schedule,
                _rate(r.job.cadence.runs_per_day if r.job.cadence else 0),
                nxt,
                shown,
                findings,
                action,
            )
        console.print(table)
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
    grid.add_column()
    for f in report.findings[:300]:
        style = _SEVERITY_STYLE[str(f.severity)]
        body = Text()
        body.append(f.location, style="bold")
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
    data = report.to_json()["summary"] if len(report.jobs) < 5000 else _quick_summary(report)
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
    console.print(
        f"[dim]Times in {report.default_tz} unless a file sets CRON_TZ; next runs after "
        f"{_iso(report.now)}.[/dim]"
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
    summary = report.to_json()["summary"]
    out.append(
        f"{summary['files']} file(s), {summary['jobs']} jobs, {summary['rejected']} rejected "
        f"line(s). Findings: {summary['findings']['error']} error, "
        f"{summary['findings']['warning']} warning, {summary['findings']['info']} info. "
        f"Next runs after {_iso(report.now)}; default timezone {report.default_tz}."
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
            nxt = _iso(r.next_runs[0]) if r.next_runs else "at boot"
            findings = ", ".join(f"`{f.rule}`" for f in r.findings) or "—"
            rec = f"**{r.classification.recommendation}** (missed: {r.classification.policy})"
            out.append(
                f"| {line.number} | `{_md(line.schedule or '')}` {r.description} | "
                f"{_rate(r.job.cadence.runs_per_day if r.job.cadence else 0)} | {nxt} | "
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


def day_rule_notes(schedule: Any) -> list[str]:
    """Say which day rule cron applies when both day fields are restricted."""
    if schedule.is_reboot:
        return []
    f = schedule.fields
    if len(f.days) == 31 or len(f.weekdays) == 7:
        return []
    if f.day_or:
        return ["both day fields are set: cron runs on either one (day of month OR day of week)"]
    return [
        "a day field starts with '*', so cron needs both to match (day of month AND day of "
        "week); without the '*' it would be OR"
    ]


def dst_notes(schedule: Any, when: datetime) -> list[str]:
    """What DST does to this schedule in the coming year (fixed-time jobs only)."""
    from datetime import timedelta

    if schedule.is_reboot or not schedule.fixed_time:
        return []
    from migrate_cron.crontab.timezone import zone_table

    table = zone_table(schedule.tz)
    notes: list[str] = []
    start = when.astimezone(UTC).replace(tzinfo=None)
    for transition in table.transitions(start.year) + table.transitions(start.year + 1):
        if transition.at < start or transition.at > start + timedelta(days=366):
            continue
        low = transition.at + min(transition.before, transition.after)
        high = transition.at + max(transition.before, transition.after)
        local_day = low.date()
        fires = list(
            schedule.iter_between(
                (transition.at - timedelta(hours=3)).replace(tzinfo=UTC),
                (transition.at + timedelta(hours=3)).replace(tzinfo=UTC),
            )
        )
        hits = [
            t
            for t in fires
            if low <= (t.astimezone(_zone(schedule.tz)).replace(tzinfo=None)) < high
            or t.replace(tzinfo=None) == transition.at
        ]
        if not hits:
            continue
        window = f"{low.strftime('%H:%M')}-{(high - timedelta(minutes=1)).strftime('%H:%M')}"
        if transition.after > transition.before:
            notes.append(
                f"{local_day}: {window} does not exist (clocks go forward); cron runs the "
                f"skipped time right after the jump, at {high.strftime('%H:%M')}"
            )
        else:
            notes.append(
                f"{local_day}: {window} happens twice (clocks go back); cron runs it only "
                "the first time"
            )
    return notes


def _warn(message: str) -> None:
    from migrate_cron.cli.common import stderr_console

    stderr_console().print(f"[yellow]warning:[/yellow] {message}", highlight=False)
