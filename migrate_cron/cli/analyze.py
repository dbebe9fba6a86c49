"""``migrate-cron analyze`` and ``migrate-cron explain``.

``analyze`` reads crontab files (or stdin, or the whole system's crontabs), runs the analysis
and prints: a Rich table per file plus the findings with their fixes (default), the documented
JSON document (``--json``), or Markdown for a ticket (``--markdown``). Data goes to stdout;
warnings (skipped unreadable files under ``--system``) go to stderr. Exit 0; 1 when a finding
reaches ``--fail-on`` (default: error — a line cron rejects or silently breaks is something to
act on; ``--fail-on never`` opts out); 2 for usage errors and unreadable files.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import CronChoice, CronOption, JsonFlag, TzOption
from migrate_cron.errors import UsageError

if TYPE_CHECKING:
    from rich.live import Live
    from rich.spinner import Spinner


class FailOn(StrEnum):
    info = "info"
    warning = "warning"
    error = "error"
    never = "never"


class FileFormat(StrEnum):
    auto = "auto"
    user = "user"
    system = "system"


# Debian cron (run-parts rules) ignores cron.d files whose names have other characters.


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
        FailOn,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a finding has at least this severity; 'never' always exits 0.",
            case_sensitive=False,
        ),
    ] = FailOn.error,
    cron: CronOption = CronChoice.debian,
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
    # Imported here, not at the top: every command's start-up (``enqueue`` from cron every
    # minute) would pay for the analysis and Rich otherwise.
    from migrate_cron.analysis.report import analyze, read_durations
    from migrate_cron.cli.render.analyze import render_markdown, render_terminal, write_report_json
    from migrate_cron.cli.render.numbers import counted
    from migrate_cron.crontab.entry import Severity
    from migrate_cron.crontab.gc_pause import gc_paused
    from migrate_cron.crontab.sources import load_files
    from migrate_cron.crontab.timezone import check_zone, host_timezone

    if as_json and markdown:
        raise UsageError("choose one of --json and --markdown")
    when = parse_now(now)
    zone = tz or host_timezone()
    check_zone(zone)
    # Parsing, analysing and printing each build acyclic values in bulk (see gc_paused); one
    # pause around all three spares the collector's scans of each stage's objects in between.
    with gc_paused(), Progress(files or []) as progress:
        crontabs = load_files(
            files or [], hosts or [], system, file_format.value, _warn, cron.value
        )
        if not crontabs:
            raise UsageError("no crontab given: pass FILE…, '-' for stdin, or --system")
        timings = read_durations(_read_text(durations), str(durations)) if durations else None
        lines = sum(len(c.lines) for c in crontabs)
        progress.say(f"analysing {counted(lines, 'line')}")
        report = analyze(
            crontabs,
            now=when,
            next_count=next_count,
            durations=timings,
            default_tz=zone,
            cron=cron.value,
        )
        if sys.stdout.isatty():
            progress.stop()  # the output itself shows it is moving
        else:
            what = "JSON" if as_json else "Markdown" if markdown else "the table"
            progress.say(f"writing {what} for {counted(len(report.jobs), 'job')}")
        if as_json:
            write_report_json(report)
        elif markdown:
            sys.stdout.write(render_markdown(report))
        else:
            render_terminal(report)
    if fail_on is not FailOn.never and report.reaches(Severity(fail_on.value)):
        raise typer.Exit(1)


def explain_command(
    expr: Annotated[str, typer.Argument(help='A cron expression, e.g. "30 2 * * 1-5" or @daily.')],
    tz: Annotated[
        str | None,
        typer.Option(
            "--tz",
            help="IANA timezone the schedule runs in (default: this host's).",
            metavar="ZONE",
        ),
    ] = None,
    next_count: NextOption = 3,
    now: NowOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The expression in words and its next runs (same semantics and defaults as analyze)."""
    from migrate_cron.cli.render.analyze import iso_z, rate, write_json
    from migrate_cron.crontab.dst import day_rule_notes, dst_notes
    from migrate_cron.crontab.schedule import Schedule, ScheduleError
    from migrate_cron.crontab.timezone import host_timezone
    from migrate_cron.crontab.timezone import zone as zone_info

    tz = tz or host_timezone()
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
                "now": iso_z(when),
                "next_runs": [
                    {"utc": iso_z(t), "local": t.astimezone(zone_info(tz)).isoformat()}
                    for t in runs
                ],
                "notes": notes,
            }
        )
        return
    rows: list[tuple[str, str]] = [
        ("Expression", schedule.expr),
        ("In words", schedule.describe()),
        ("Timezone", tz),
        ("Runs per day", rate(schedule.runs_per_day())),
    ]
    for i, t in enumerate(runs):
        local = t.astimezone(zone_info(tz))
        shown = local.strftime("%a %Y-%m-%d %H:%M %Z")
        if tz not in ("UTC", "Etc/UTC"):
            shown += f"  ({t.strftime('%H:%M')} UTC)"
        rows.append(("Next runs" if i == 0 else "", shown))
    rows += [("Note", note) for note in notes]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        sys.stdout.write(f"{label:>{width}}  {value}\n")


# -- progress --------------------------------------------------------------------------------

#: Input size from which a terminal gets a spinner on stderr (about 5,000 crontab lines): below
#: it the answer comes before a spinner would have been seen.
LONG_INPUT_BYTES = 512 * 1024


class Progress:
    """A spinner on stderr naming the stage of a long analysis (reading, analysing, writing),
    shown only when stderr is a terminal and the files are big; it never touches stdout, so
    ``--json`` and pipes are unchanged."""

    def __init__(self, files: list[str]) -> None:
        self._live: Live | None = None
        self._spinner: Spinner | None = None
        self._wanted = sys.stderr.isatty() and _input_size(files) >= LONG_INPUT_BYTES

    def __enter__(self) -> Progress:
        if self._wanted:
            from rich.live import Live
            from rich.spinner import Spinner

            from migrate_cron.cli.common import stderr_console

            self._spinner = Spinner("dots", "reading the crontab(s) …")
            # Not rich's console.status: its Live takes over sys.stdout while it runs, and the
            # report written meanwhile would land on stderr.
            self._live = Live(
                self._spinner,
                console=stderr_console(),
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
                refresh_per_second=10,
            )
            self._live.start()
        return self

    def say(self, stage: str) -> None:
        if self._spinner is not None:
            self._spinner.update(text=f"{stage} …")

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = self._spinner = None

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _input_size(files: list[str]) -> int:
    """Bytes in the named files (a ``HOST:PATH`` label's path; stdin and missing files: 0)."""
    total = 0
    for name in files:
        for path in (name, name.split(":", 1)[-1]):
            if os.path.isfile(path):
                total += os.path.getsize(path)
                break
    return total


# -- input ---------------------------------------------------------------------------------


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


# -- output --------------------------------------------------------------------------------


def _warn(message: str) -> None:
    from migrate_cron.cli.common import stderr_console

    stderr_console().print(f"[yellow]warning:[/yellow] {message}", highlight=False)
