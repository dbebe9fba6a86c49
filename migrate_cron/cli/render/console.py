"""The console a report (``analyze``, ``plan``) or a table (``status``, ``jobs list``) is
printed on, and how wide it is."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def chosen_width() -> bool:
    """Whether the user chose the width: a terminal's own, or COLUMNS (also in a pipe). Then a
    table that does not fit becomes stacked records, never clipped columns."""
    return sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()


def report_console(pipe_width: int = 140) -> Console:
    """A terminal's own width; piped, the width COLUMNS asks for, else a fixed ``pipe_width``
    (a stable layout for pipes and files; scripts use --json)."""
    from rich.console import Console

    return Console(highlight=False, width=None if chosen_width() else pipe_width)


#: Piped ``status`` and ``jobs list``: wide enough for their tables, so a pipe or a file gets
#: the same table a terminal shows (stacked records only where the user chose a narrow width).
TABLE_PIPE_WIDTH = 160


def table_console() -> Console:
    """``report_console`` at the width the operators' tables need when piped; soft-wrapped
    there, as ``stdout_console`` is, so lines are not padded to the width."""
    console = report_console(pipe_width=TABLE_PIPE_WIDTH)
    console.soft_wrap = not sys.stdout.isatty()
    return console
