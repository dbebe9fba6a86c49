"""Tables that stay readable in a narrow terminal: stacked records instead of cut names.

A rich table wider than the terminal shrinks its columns, and a column of job names then shows
``invoices-e…`` twice — two jobs that look alike, in the one place an operator reads them.
``FitOrStack`` decides at render time (so it works inside ``Group`` and ``Live`` too): the
table as it is when it fits, otherwise one record per row, its first cell as a heading and the
other cells as ``header value`` pairs that wrap between pairs and never cut an identifier.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

INDENT = "  "
GAP = "   "


class FitOrStack:
    """Render ``table`` when it fits the width, else its rows as stacked records."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if needed_width(self.table) <= options.max_width:
            yield self.table
            return
        table = self.table
        if table.title:
            yield _text(table.title, "bold")
        headers = [_plain(c.header) for c in table.columns]
        columns = [list(c.cells) for c in table.columns]
        width = max(options.max_width, 20)
        for row in range(table.row_count):
            cells = [_one_line(_text(col[row])) for col in columns]
            head = Text.assemble((f"{headers[0]} ", "dim"), cells[0], style="bold")
            yield from head.wrap(console, width, overflow="fold")
            line = Text(INDENT)
            for header, cell in zip(headers[1:], cells[1:], strict=True):
                if not cell.plain.strip():
                    continue
                pair = Text.assemble((f"{header} ", "dim"), cell)
                # Lines break between pairs, never inside one that fits on a line.
                if line.plain.strip() and line.cell_len + len(GAP) + pair.cell_len > width:
                    yield line
                    line = Text(INDENT)
                if len(INDENT) + pair.cell_len > width:  # longer than a line: fold, indented
                    for part in pair.wrap(console, width - len(INDENT), overflow="fold"):
                        yield Text(INDENT) + part
                    continue
                if line.plain.strip():
                    line.append(GAP)
                line.append_text(pair)
            if line.plain.strip():
                yield line


def needed_width(table: Table) -> int:
    """Columns wide enough that rich cuts nothing: a ``fold`` column may wrap between words,
    every other column keeps its widest cell whole (rich would shrink a wrappable column below
    its longest word and cut it with an ellipsis). Plus padding and borders."""
    total = 0
    for column in table.columns:
        cells = [_text(c) for c in column.cells]
        if table.show_header:
            cells.append(_text(column.header))
        if column.overflow == "fold" and not column.no_wrap:
            words = [w for c in cells for w in c.plain.split()]
            width = max((Text(w).cell_len for w in words), default=0)
        else:
            width = max((line_len for c in cells for line_len in _line_lens(c)), default=0)
        total += width
    _, right, _, left = table.padding
    total += (left + right) * len(table.columns)
    if not table.pad_edge:
        total -= left + right
    if table.box is not None:
        total += len(table.columns) - 1 + (2 if table.show_edge else 0)
    return total


def _line_lens(text: Text) -> list[int]:
    return [Text(line).cell_len for line in text.plain.splitlines() or [""]]


def _one_line(text: Text) -> Text:
    """A cell's lines joined with " · ": in a record, a line break would read as a new field."""
    if "\n" not in text.plain:
        return text
    return Text(" · ").join(part for part in text.split("\n") if part.plain.strip())


def _text(value: object, style: str = "") -> Text:
    if isinstance(value, Text):
        return value
    return Text.from_markup(str(value), style=style)


def _plain(value: object) -> str:
    return value.plain if isinstance(value, Text) else Text.from_markup(str(value)).plain
