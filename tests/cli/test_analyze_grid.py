"""``analyze``'s table is printed by ``render/grid.py`` (row by row, from plain strings) instead
of rich's ``Table`` (about 1 ms a row: 35 s for a 35,000-job crontab). The grid must print what
rich prints for the same cells — the same widths, wrapping, ellipses and stacked records — at
every width, for every sample crontab and for lines like the benchmark's."""

from __future__ import annotations

import io
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich._wrap import divide_line
from rich.console import Console
from rich.table import Table
from rich.text import Text

from migrate_cron.analysis import analyze
from migrate_cron.cli.render.analyze import job_columns, job_rows
from migrate_cron.cli.render.fit import FitOrStack
from migrate_cron.cli.render.grid import _divide, write_grid
from migrate_cron.cli.render.grid_layout import Cell, GridColumn, Row
from migrate_cron.crontab.parser import parse_crontab

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p for p in (ROOT / "samples").iterdir() if "crontab" in p.name)
WIDTHS = (40, 60, 80, 100, 140, 200)


def bench_text() -> str:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_analyze
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return bench_analyze.generate(400) + bench_analyze.generate_realistic(400)


def rows_of(text: str, label: str) -> list[Row]:
    crontab = parse_crontab(text, label)
    report = analyze([crontab], now=datetime(2026, 3, 1, tzinfo=UTC), default_tz="UTC")
    return list(job_rows(report.jobs, crontab.ignored))


CASES = [(p.name, p.read_text()) for p in SAMPLES] + [("bench", bench_text())]


def console(width: int, color: bool = False) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(
        file=out,
        width=width,
        color_system="truecolor" if color else None,
        force_terminal=color,
        highlight=False,
        legacy_windows=False,
    ), out


def rich_table(title: str, columns: tuple[GridColumn, ...], rows: list[Row]) -> Table:
    """The same cells as rich ``Text`` in a rich ``Table`` with the same column settings."""
    table = Table(title=title, title_justify="left", show_lines=False, expand=False)
    for c in columns:
        table.add_column(
            c.header,
            justify=c.justify,
            style=c.style or None,
            overflow="fold" if c.fold else "ellipsis",
            min_width=c.min_width,
            max_width=c.max_width,
        )
    for row in rows:
        table.add_row(*(as_text(cell) for cell in row))
    return table


def as_text(cell: Cell) -> Text:
    text = Text()
    for i, paragraph in enumerate(cell):
        if i:
            text.append("\n")
        for part, style in paragraph:
            text.append(part, style=style or None)
    return text


def grid_output(
    width: int, rows: list[Row], stack: bool, color: bool = False, title: str = "t — 3 jobs"
) -> str:
    con, out = console(width, color)
    write_grid(con, title, job_columns(), lambda: iter(rows), stack_when_narrow=stack)
    return out.getvalue()


@pytest.mark.parametrize(("name", "text"), CASES, ids=[name for name, _ in CASES])
def test_the_grid_prints_what_rich_prints_at_every_width(name: str, text: str) -> None:
    rows = rows_of(text, name)
    assert rows
    for width in WIDTHS:
        table = rich_table("t — 3 jobs", job_columns(), rows)
        grid = grid_output(width, rows, stack=False)
        # Narrower than the columns' minimums the console wraps rich's lines: compare the rest.
        if max(len(line) for line in grid.splitlines()) <= width:
            con, out = console(width)
            con.print(table)
            assert grid == out.getvalue(), width
        con, out = console(width)
        con.print(FitOrStack(table))
        assert grid_output(width, rows, stack=True) == out.getvalue(), width


def test_stacked_records_when_the_table_does_not_fit_and_the_width_was_chosen() -> None:
    rows = rows_of((ROOT / "samples" / "shop.crontab").read_text(), "shop.crontab")
    stacked = grid_output(80, rows, stack=True)
    assert "┃" not in stacked
    assert "  Do queue · missed: skip · 3/4 sentences" in stacked.splitlines()
    assert all(len(line) <= 80 for line in stacked.splitlines())
    # A pipe's fixed width keeps the table (shrunk), as it always did.
    assert "┃" in grid_output(80, rows, stack=False)


def test_colours_do_not_change_the_text() -> None:
    rows = rows_of((ROOT / "samples" / "shop.crontab").read_text(), "shop.crontab")
    for stack in (False, True):
        coloured = grid_output(100, rows, stack=stack, color=True)
        assert "\x1b[" in coloured
        assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == grid_output(100, rows, stack=stack)


def test_control_characters_and_tabs_are_shown_as_rich_shows_them() -> None:
    columns = (GridColumn("A", fold=True, max_width=12), GridColumn("B", justify="right"))
    rows: list[Row] = [
        (((("ab\tcd\re", ""), ("\tf", "bold")),), ((("x y", ""),), (("zz", "dim"),))),
        (((("", ""),),), ()),
    ]
    for width in (10, 20, 80):
        con, out = console(width)
        con.print(rich_table("tabs", columns, rows))
        con2, out2 = console(width)
        write_grid(con2, "tabs", columns, lambda: iter(rows), stack_when_narrow=False)
        assert out2.getvalue() == out.getvalue(), width


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "bb", "ccccccc", " ", "  ", "-", "/x/y/z", "é", "日本"])).map(
        "".join
    ),
    st.integers(min_value=1, max_value=16),
    st.booleans(),
)
def test_line_breaks_are_rich_s(text: str, width: int, fold: bool) -> None:
    """The grid's own ``divide_line`` for one-cell characters breaks where rich's does."""
    assert _divide(text, width, fold) == divide_line(text, width, fold=fold)
