"""``migrate-cron status``: the queue's numbers per kind, as a table, JSON, a live view, or a
Nagios/Kubernetes-probe style ``--check``."""

from __future__ import annotations

import signal
import sys
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import (
    DatabaseUrl,
    JsonFlag,
    OptionalRegistry,
    SinceAlias,
    TablePrefix,
    WindowOption,
    optional_registry,
    window_seconds,
)
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from migrate_cron.ops.status import StatusReport, Thresholds
    from migrate_cron.registry import JobSpec
    from migrate_cron.store import Store


def register(app: typer.Typer) -> None:
    app.command("status")(status)


def status(
    window: WindowOption = None,
    since: SinceAlias = None,
    as_json: JsonFlag = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Live view refreshing in place until Ctrl-C.")
    ] = False,
    interval: Annotated[
        str, typer.Option("--interval", help="Refresh interval for --watch.")
    ] = "2s",
    check: Annotated[
        bool,
        typer.Option("--check", help="Exit 1 with one line per breached threshold, 0 if none."),
    ] = False,
    max_age: Annotated[
        str, typer.Option("--max-age", help="--check: oldest ready job may wait this long.")
    ] = "5m",
    max_failed: Annotated[
        int, typer.Option("--max-failed", min=0, help="--check: failed jobs allowed per kind.")
    ] = 0,
    max_lag: Annotated[
        str, typer.Option("--max-lag", help="--check: a scheduled run may start this late.")
    ] = "2m",
    registry: OptionalRegistry = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Queue numbers per kind; --check for probes, --watch for a live view.

    Per kind: ready / scheduled / running / done (in the window) / failed
    counts, the age of the oldest ready job, run-time p50/p95/max over the
    window, last success and failure. For scheduled jobs: the last and next
    slot and how late the last run started (lag).
    """
    from migrate_cron.errors import UsageError
    from migrate_cron.ops.durations import parse_duration

    seconds = window_seconds(window, since)
    if watch and (as_json or check):
        raise UsageError("--watch is a live view for a terminal; drop --json/--check")
    from migrate_cron.ops.status import Thresholds

    limits = Thresholds(
        max_age=parse_duration(max_age, option="--max-age"),
        max_failed=max_failed,
        max_lag=parse_duration(max_lag, option="--max-lag"),
    )
    refresh = parse_duration(interval, option="--interval")
    specs = optional_registry(registry)
    from migrate_cron.cli.common import open_store

    store = open_store(database_url, table_prefix)
    try:
        if watch:
            _watch(store, seconds, specs, refresh)
        elif check:
            _check(_report(store, seconds, specs), limits, as_json)
        else:
            report = _report(store, seconds, specs)
            if as_json:
                from migrate_cron.cli.common import print_json
                from migrate_cron.ops.status import report_to_dict

                print_json(report_to_dict(report))
            else:
                _console().print(render(report))
    finally:
        store.dispose()


def _report(store: Store, window: float, specs: list[JobSpec]) -> StatusReport:
    from dataclasses import replace

    from migrate_cron.ops.bought import since_switch
    from migrate_cron.ops.status import build_report

    now = store.db_now()
    report = build_report(store.status(now - timedelta(seconds=window), now), specs)
    return replace(report, paused=store.paused(), since_switch=since_switch(store, specs))


def _check(report: StatusReport, limits: Thresholds, as_json: bool) -> None:
    from migrate_cron.ops.durations import format_duration
    from migrate_cron.ops.status import breaches_to_dict, check, report_to_dict

    breaches = check(report, limits)
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json(
            {
                "ok": not breaches,
                "breaches": breaches_to_dict(breaches),
                "status": report_to_dict(report),
            }
        )
    elif breaches:
        for b in breaches:
            sys.stdout.write(f"CRITICAL {b.message}\n")
    else:
        sys.stdout.write(
            f"OK {len(report.kinds)} kinds: no ready job older than "
            f"{format_duration(limits.max_age)}, failed <= {limits.max_failed} per kind, "
            f"no scheduled run later than {format_duration(limits.max_lag)}\n"
        )
    if breaches:
        raise typer.Exit(1)


def _watch(store: Store, window: float, specs: list[JobSpec], interval: float) -> None:
    from rich.live import Live
    from rich.text import Text

    from migrate_cron.errors import MigrateCronError, UsageError

    console = _console()
    if not console.is_terminal:
        raise UsageError("--watch needs a terminal; use --json (or --check) in scripts")
    interval = max(interval, 0.2)
    # Ctrl-C ends the watch between two refreshes instead of raising KeyboardInterrupt in the
    # middle of a database call or of Rich's output (which could leave the terminal, or the
    # process, stuck under load). A second Ctrl-C interrupts at once.
    stop: list[bool] = []

    def on_interrupt(_signum: int, _frame: object) -> None:
        stop.append(True)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        with Live(console=console, auto_refresh=False, transient=False) as live:
            while not stop:
                try:
                    view: RenderableType = render(_report(store, window, specs))
                except MigrateCronError as exc:  # keep watching through a database restart
                    view = Text(f"error: {exc}", style="red")
                live.update(_footer(view, interval), refresh=True)
                deadline = time.monotonic() + interval
                while not stop and time.monotonic() < deadline:
                    time.sleep(0.05)
    except KeyboardInterrupt:
        return
    finally:
        signal.signal(signal.SIGINT, previous)


def _footer(view: RenderableType, interval: float) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    from migrate_cron.ops.durations import format_duration

    return Group(
        view, Text(f"refreshing every {format_duration(interval)} — Ctrl-C to stop", style="dim")
    )


# ---------------------------------------------------------------------- rendering
def _console() -> Console:
    """stdout; piped output gets the same fixed width as ``jobs list`` (``table_console``)."""
    from migrate_cron.cli.render.console import table_console

    return table_console()


def render(report: StatusReport) -> RenderableType:
    """The human view: one table of kinds and, if any, one of scheduled jobs."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from migrate_cron.cli.render.fit import FitOrStack
    from migrate_cron.ops.durations import format_duration as fd

    win = fd(report.window)
    kinds = Table(
        title=f"queue at {report.now:%Y-%m-%d %H:%M:%S}Z — done, durations: last {win}",
        title_justify="left",
    )
    for name in (
        "kind",
        "ready",
        "sched",
        "running",
        "failed",
        "cancelled",
        "done",
        "oldest ready",
        "p50",
        "p95",
        "max",
        "last ok",
        "last failure",
    ):
        kinds.add_column(name, justify="left" if name == "kind" else "right", no_wrap=True)
    for k in report.kinds:
        kinds.add_row(
            k.kind,
            str(k.ready),
            str(k.scheduled),
            str(k.running),
            Text(str(k.failed), style="bold red" if k.failed else ""),
            str(k.cancelled),
            str(k.done),
            fd(k.oldest_ready_age),
            fd(k.duration_p50),
            fd(k.duration_p95),
            fd(k.duration_max),
            _ago(report.now, k.last_success),
            Text(_ago(report.now, k.last_failure), style="red" if k.last_failure else ""),
        )
    if not report.kinds:
        kinds.add_row("(no jobs)", *[""] * 12)
    parts: list[RenderableType] = [FitOrStack(kinds)]
    if report.paused:
        from migrate_cron.store.leases import SCHEDULER_PAUSE

        lines = [
            f"paused: {'the scheduler' if name == SCHEDULER_PAUSE else name} (by {by}); "
            f"`migrate-cron {'scheduler resume' if name == SCHEDULER_PAUSE else 'resume ' + name}`"
            for name, by in sorted(report.paused.items())
        ]
        parts.append(Text("\n".join(lines), style="yellow"))
    scheduled = [k.schedule for k in report.kinds if k.schedule is not None]
    if not scheduled:
        return Group(*parts) if len(parts) > 1 else parts[0]
    sched = Table(title="scheduled jobs", title_justify="left")
    for name in ("job", "schedule", "last slot", "outcome", "run", "lag", "next slot"):
        sched.add_column(name, no_wrap=name != "schedule")
    for s in scheduled:
        sched.add_row(
            s.job,
            f"{s.expression} ({s.timezone})" if s.expression else "-",
            _at(s.last_slot),
            s.last_outcome or "-",
            s.job_state or "-",
            f"{fd(s.lag)} ({s.lag_reason})" if s.lag is not None else (s.lag_reason or "-"),
            _at(s.next_slot),
        )
    return Group(*parts, FitOrStack(sched))


def _ago(now: datetime, when: datetime | None) -> str:
    from migrate_cron.ops.durations import format_duration

    if when is None:
        return "-"
    return f"{format_duration((now - when).total_seconds())} ago"


def _at(when: datetime | None) -> str:
    return f"{when:%Y-%m-%d %H:%M}Z" if when is not None else "-"
