"""Every table stays readable at 80 columns: a name is never cut (``invoices-e…`` twice would
be two jobs that look alike). Rendered with rich's ``Console(width=…)`` and, for ``jobs list``,
from the installed command with ``COLUMNS``."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console, RenderableType
from rich.table import Table

from migrate_cron.cli.render.fit import FitOrStack
from migrate_cron.cli.status import render
from migrate_cron.ops.status import KindReport, ScheduleReport, StatusReport
from migrate_cron.store import Store
from tests.conftest import run_cli

NAMES = ("invoices-export-datev-accountant", "invoices-export-datev-accounting")
NOW = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)


def shown(renderable: RenderableType, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, legacy_windows=False).print(renderable)
    return out.getvalue()


def report() -> StatusReport:
    kinds = tuple(
        KindReport(
            kind=name,
            ready=3,
            done=12,
            failed=1,
            duration_p50=0.2,
            duration_p95=1.5,
            duration_max=4.0,
            last_success=NOW - timedelta(minutes=5),
            last_failure=NOW - timedelta(hours=2),
            oldest_ready_age=42.0,
            schedule=ScheduleReport(
                job=name,
                expression="*/5 * * * *",
                timezone="Europe/Berlin",
                last_slot=NOW - timedelta(minutes=5),
                last_outcome="enqueued",
                job_state="done",
                lag=3.0,
                lag_reason="started",
                next_slot=NOW + timedelta(minutes=5),
            ),
        )
        for name in NAMES
    )
    return StatusReport(now=NOW, since=NOW - timedelta(days=1), kinds=kinds)


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_status_never_cuts_a_name_at_any_width(width: int) -> None:
    text = shown(render(report()), width)
    assert "…" not in text
    for name in NAMES:
        assert text.count(name) == 2  # the kinds table and the scheduled jobs table
    assert all(len(line) <= width for line in text.splitlines())
    if width >= 200:  # room for the table itself
        assert "┃ kind" in text


def test_a_table_that_fits_is_printed_as_a_table_else_stacked() -> None:
    table = Table()
    for header in ("id", "kind", "state"):
        table.add_column(header, no_wrap=True)
    table.add_row("7", NAMES[0], "failed")
    wide, narrow = shown(FitOrStack(table), 100), shown(FitOrStack(table), 45)
    assert "┃ id" in wide and NAMES[0] in wide
    assert narrow.splitlines() == ["id 7", f"  kind {NAMES[0]}", "  state failed"]
    tiny = shown(FitOrStack(table), 24)  # narrower than the name: folded, never cut
    assert NAMES[0] in "".join(line.strip() for line in tiny.splitlines())
    assert "…" not in tiny and all(len(line) <= 24 for line in tiny.splitlines())


@pytest.mark.parametrize("columns", ["80", "200"])
def test_jobs_list_keeps_whole_kind_names(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store, columns: str
) -> None:
    for name in NAMES:
        store.enqueue(name)
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "COLUMNS": columns,
    }
    done = run_cli("jobs", "list", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    for name in NAMES:
        assert name in done.stdout
    assert all(len(line) <= int(columns) for line in done.stdout.splitlines())


def test_analyze_in_an_80_column_terminal_keeps_every_column(tmp_path: Path) -> None:
    """In a real terminal (a pty from util-linux's ``script``), 80 columns: no clipped "Do"."""
    import re
    import shlex
    import shutil
    import subprocess

    from tests.conftest import cli_path

    shutil.copy(Path(__file__).parents[2] / "samples" / "shop.crontab", tmp_path / "shop.crontab")
    inner = f"stty cols 80; {shlex.quote(cli_path())} analyze shop.crontab"
    done = subprocess.run(
        ["script", "-qec", inner, "/dev/null"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", done.stdout).replace("\r", "")
    assert done.returncode == 0, text  # the sample has no error finding
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    # Line 12: polls, overlaps, someone waits; nothing shows it hands work over (3 of 4).
    assert "  Do queue · missed: skip · 3/4 sentences" in lines
    assert not [line for line in lines if line.rstrip().endswith("…")]  # nothing clipped
