"""Tables of tens of thousands of rows, written line by line.

rich's ``Table`` measures and renders every cell through several layers of objects — about
1 ms a row: ``analyze`` on a 35,000-job crontab took 35 s of CPU and 550 MB to print its table,
ten times its ``--json``. ``write_grid`` prints the same table (rich's box, its column-width
rules and its word wrapping: ``divide_line``, the function rich itself wraps with) from plain
strings, one row at a time, so time and memory grow with the row, not with the table. When
the caller asks for it (a terminal, or a width the user chose) and the table does not fit, it
prints stacked records exactly as ``FitOrStack`` does, so no column is ever clipped.

Cells are tuples of paragraphs (one per line of the cell), each a tuple of ``(text, style)``
spans: the one shape that both layouts need, and cheap to build and to measure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rich import box as rich_box
from rich._wrap import divide_line
from rich.cells import set_cell_size
from rich.control import strip_control_codes
from rich.text import Text

from migrate_cron.cli.render.fit import GAP, INDENT
from migrate_cron.cli.render.grid_layout import (
    Cell,
    GridColumn,
    Paragraph,
    Row,
    Span,
    column_widths,
    measure,
    needed_width,
    text_width,
)

if TYPE_CHECKING:
    from rich.console import Console


TAB_SIZE = 8
_EMPTY: Cell = ((("", ""),),)


class Styler:
    """ANSI start/end codes per style name, asked of the console once per style (the same
    codes rich writes), or nothing when the console has no colour."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._codes: dict[str, tuple[str, str]] = {}
        self.plain = console.color_system is None

    def __call__(self, text: str, style: str) -> str:
        if self.plain or not style or not text:
            return text
        codes = self._codes.get(style)
        if codes is None:
            with self._console.capture() as captured:
                self._console.print(Text("\0", style=style), end="")
            start, _, end = captured.get().partition("\0")
            codes = self._codes[style] = (start, end)
        return f"{codes[0]}{text}{codes[1]}"


def write_grid(
    console: Console,
    title: str,
    columns: tuple[GridColumn, ...],
    rows: Callable[[], Iterator[Row]],
    *,
    stack_when_narrow: bool,
) -> None:
    """Print the table (or, narrower than it needs and ``stack_when_narrow``, the records).

    ``rows`` is called twice — once to measure, once to print — so no row is kept."""
    width = console.width
    measures = measure(columns, rows())
    out = console.file
    style = Styler(console)
    if stack_when_narrow and needed_width(columns, measures) > width:
        console.print(Text.from_markup(title, style="bold"))
        for row in rows():
            out.writelines(_record(columns, row, max(width, 20), style))
        return
    widths = column_widths(columns, measures, width)
    console.print(
        console.render_str(title, style="table.title", highlight=False),
        width=sum(widths) + len(columns) + 1,
        justify="left",
    )
    box = rich_box.HEAVY_HEAD.substitute(console.options, safe=console.safe_box)
    header: Row = tuple((((column.header, "table.header"),),) for column in columns)
    out.write(box.get_top(widths) + "\n")
    out.writelines(
        _row_lines(columns, widths, header, style, box.head_left, box.head_vertical, box.head_right)
    )
    out.write(box.get_row(widths, "head", edge=True) + "\n")
    for row in rows():
        out.writelines(
            _row_lines(columns, widths, row, style, box.mid_left, box.mid_vertical, box.mid_right)
        )
    out.write(box.get_bottom(widths) + "\n")


def _row_lines(
    columns: tuple[GridColumn, ...],
    widths: list[int],
    row: Row,
    style: Styler,
    left: str,
    vertical: str,
    right: str,
    *,
    header: bool = False,
) -> list[str]:
    """A row's printed lines: its cells wrapped, padded, and the short ones topped up with
    blank lines (rich's vertical="top"; a header row's cells sit on its bottom line)."""
    cells: list[list[str]] = []
    blanks: list[str] = []
    for column, size, cell in zip(columns, widths, row, strict=True):
        base = column.style
        edge = style(" ", base)
        lines: list[str] = []
        for paragraph in cell or _EMPTY:
            lines.extend(
                edge + text + edge for text in _wrap(paragraph, size - 2, column, base, style)
            )
        cells.append(lines)
        blanks.append(style(" " * size, base))
    height = max(len(lines) for lines in cells)
    if header:
        cells = [
            [blank] * (height - len(lines)) + lines
            for lines, blank in zip(cells, blanks, strict=True)
        ]
    return [
        left
        + vertical.join(
            lines[i] if i < len(lines) else blank
            for lines, blank in zip(cells, blanks, strict=True)
        )
        + right
        + "\n"
        for i in range(height)
    ]


def _wrap(
    paragraph: Paragraph, width: int, column: GridColumn, base: str, style: Styler
) -> list[str]:
    """One paragraph of a cell: rich's ``Text.wrap`` then its left/right justification."""
    if width <= 0:
        return [""]
    if len(paragraph) == 1 and column.justify == "left":
        # Most cells: one span that fits. No wrapping, no justification but the padding.
        text, span_style = paragraph[0]
        if text.isascii() and text.isprintable() and len(text) <= width:
            return [style(text, _join(base, span_style)) + style(" " * (width - len(text)), base)]
    spans = _clean(paragraph)
    plain = "".join(text for text, _ in spans)
    # A text no wider than the line has no break (every word fits where it is).
    breaks = _divide(plain, width, column.fold) if text_width(plain) > width else []
    out: list[str] = []
    for start, end in zip([0, *breaks], [*breaks, len(plain)], strict=True):
        line = plain[start:end]
        size = text_width(line)
        if size > width:  # rich's rstrip_end: trailing spaces beyond the width go first
            spaces = len(line) - len(line.rstrip())
            cut = min(spaces, size - width)
            if cut:
                line, end, size = line[: len(line) - cut], end - cut, size - cut
        if column.justify == "right":
            stripped = line.rstrip()
            end -= len(line) - len(stripped)
            line, size = stripped, text_width(stripped)
        if size > width:  # rich's truncate: ellipsis, or a plain cut when folding
            keep = set_cell_size(line, width if column.fold else width - 1)
            keep += "" if column.fold else "…"
            first = spans[0][1] if spans else ""
            styled, size = style(keep, _join(base, first)), text_width(keep)
        else:
            styled = _styled(spans, start, end, base, style)
        pad = style(" " * (width - size), base)
        out.append(pad + styled if column.justify == "right" else styled + pad)
    return out


_WORDS = re.compile(r"\s*\S+\s*")


def _divide(text: str, width: int, fold: bool) -> list[int]:
    """rich's ``divide_line`` (where lines break), with its cell widths as plain lengths when
    every character is one cell wide — the usual command line, and twice as fast."""
    if not (text.isascii() and text.isprintable()):
        return divide_line(text, width, fold=fold)
    breaks: list[int] = []
    offset = 0
    for match in _WORDS.finditer(text):
        start, end = match.span()
        size = len(match.group().rstrip())
        if width - offset >= size:
            offset += end - start
        elif size > width:
            if fold:  # the word across lines of ``width`` characters (rich's chop_cells)
                for cut in range(start, end, width):
                    if cut:
                        breaks.append(cut)
                offset = end - (start + (end - start - 1) // width * width)
            else:
                if start:
                    breaks.append(start)
                offset = end - start
        elif offset and start:
            breaks.append(start)
            offset = end - start
    return breaks


def _clean(paragraph: Paragraph) -> Paragraph:
    """What rich's ``Text`` does to its input: control codes dropped, tabs expanded."""
    out: list[Span] = []
    position = 0
    for text, span_style in paragraph:
        if not text.isprintable():
            text = strip_control_codes(text)
            if "\t" in text:
                text = (" " * position + text).expandtabs(TAB_SIZE)[position:]
        out.append((text, span_style))
        position += len(text)
    return tuple(out)


def _styled(spans: Paragraph, start: int, end: int, base: str, style: Styler) -> str:
    if len(spans) == 1:
        text, span_style = spans[0]
        return style(text[start:end], _join(base, span_style))
    pieces: list[str] = []
    offset = 0
    for text, span_style in spans:
        low, high = max(start, offset), min(end, offset + len(text))
        if low < high:
            pieces.append(style(text[low - offset : high - offset], _join(base, span_style)))
        offset += len(text)
    return "".join(pieces)


def _join(base: str, span_style: str) -> str:
    return f"{base} {span_style}" if base and span_style else base or span_style


def _record(columns: tuple[GridColumn, ...], row: Row, width: int, style: Styler) -> list[str]:
    """One row as ``FitOrStack`` stacks it: the first cell as a heading, then ``header value``
    pairs that wrap between pairs and are folded (indented) only when longer than a line."""
    out: list[str] = []
    head: Paragraph = ((f"{columns[0].header} ", "dim"), *_one_line(row[0]))
    head = tuple((text, _join("bold", s)) for text, s in head)
    bold = GridColumn("", fold=True)
    out += [line + "\n" for line in _wrap_plain(head, width, bold, style)]
    line: list[Span] = [(INDENT, "")]
    used = len(INDENT)
    for column, cell in zip(columns[1:], row[1:], strict=True):
        value = _one_line(cell)
        if not "".join(text for text, _ in value).strip():
            continue
        pair: Paragraph = ((f"{column.header} ", "dim"), *value)
        size = text_width("".join(text for text, _ in pair))
        if used > len(INDENT) and used + len(GAP) + size > width:
            out.append(_line(line, style))
            line, used = [(INDENT, "")], len(INDENT)
        if len(INDENT) + size > width:
            for part in _wrap_plain(pair, width - len(INDENT), bold, style):
                out.append(INDENT + part + "\n")
            continue
        if used > len(INDENT):
            line.append((GAP, ""))
            used += len(GAP)
        line += pair
        used += size
    if used > len(INDENT):
        out.append(_line(line, style))
    return out


def _wrap_plain(paragraph: Paragraph, width: int, column: GridColumn, style: Styler) -> list[str]:
    """Wrapped lines without the padding a table cell gets (a record line is not padded)."""
    spans = _clean(paragraph)
    plain = "".join(text for text, _ in spans)
    breaks = divide_line(plain, width, fold=column.fold)
    out = []
    for start, end in zip([0, *breaks], [*breaks, len(plain)], strict=True):
        size = text_width(plain[start:end])
        if size > width:
            spaces = len(plain[start:end]) - len(plain[start:end].rstrip())
            end -= min(spaces, size - width)
        out.append(_styled(spans, start, end, "", style))
    return out


def _line(spans: list[Span], style: Styler) -> str:
    return "".join(style(text, s) for text, s in spans) + "\n"


def _one_line(cell: Cell) -> Paragraph:
    """A cell's lines joined with " · " (``fit._one_line``): in a record a line break would
    read as a new field."""
    parts = [p for p in cell if "".join(text for text, _ in p).strip()]
    out: list[Span] = []
    for i, paragraph in enumerate(parts):
        if i:
            out.append((" · ", ""))
        out.extend(paragraph)
    return tuple(out)
