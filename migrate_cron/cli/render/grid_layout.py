"""The grid's cells and its column widths: rich's own width rules (``Table``'s measuring,
collapsing and last-resort reduction) run over plain strings, in one pass over the rows, so the
printed table is the one rich would print.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from rich._ratio import ratio_reduce
from rich.cells import cell_len

Span = tuple[str, str]


Paragraph = tuple[Span, ...]


Cell = tuple[Paragraph, ...]


Row = tuple[Cell, ...]


PADDING = 2  # one space either side of every cell, as rich's default table padding


@dataclass(frozen=True, slots=True)
class GridColumn:
    header: str
    justify: Literal["left", "right"] = "left"
    fold: bool = False  # rich's overflow="fold"; otherwise "ellipsis"
    min_width: int | None = None
    max_width: int | None = None
    style: str = ""


@dataclass(slots=True)
class Measure:
    """Per column: longest word and longest line, as rich's ``Text`` measures them."""

    word: int
    line: int


def measure(columns: tuple[GridColumn, ...], rows: Iterable[Row]) -> list[Measure]:
    """One pass over the rows (headers included) — the only thing the layout needs of them."""
    found = [Measure(0, 0) for _ in columns]
    for column, m in zip(columns, found, strict=True):
        m.word = max((text_width(w) for w in column.header.split()), default=0)
        m.line = text_width(column.header)
    for row in rows:
        for cell, m in zip(row, found, strict=True):
            for paragraph in cell:
                plain = paragraph[0][0] if len(paragraph) == 1 else "".join(t for t, _ in paragraph)
                simple = plain.isascii() and plain.isprintable()
                size = len(plain) if simple else cell_len(plain)
                if size > m.line:
                    m.line = size
                if size > m.word:  # a line no longer than the longest word has none longer
                    # rich: a text without words measures its line as its narrowest width
                    words = plain.split()
                    word = (
                        max(map(len if simple else cell_len, words), default=size)
                        if words
                        else size
                    )
                    if word > m.word:
                        m.word = word
    return found


def needed_width(columns: tuple[GridColumn, ...], measures: list[Measure]) -> int:
    """Width at which nothing is cut (``fit.needed_width``'s rule): fold columns may wrap
    between words, the others keep their longest line whole; padding and borders added."""
    total = sum(
        (m.word if c.fold else m.line) + PADDING for c, m in zip(columns, measures, strict=True)
    )
    return total + len(columns) + 1


def column_widths(
    columns: tuple[GridColumn, ...], measures: list[Measure], max_width: int
) -> list[int]:
    """rich's ``Table._calculate_column_widths`` for text cells (no expand, no fixed widths):
    widest lines first, then the wrappable columns collapsed, widest first, to fit."""
    available = max_width - (len(columns) + 1)

    def ranges(limit: list[int]) -> list[tuple[int, int]]:
        out = []
        for column, m, cap in zip(columns, measures, limit, strict=True):
            low, high = min(m.word + PADDING, cap), min(m.line + PADDING, cap)
            if column.min_width is not None:
                low = max(low, column.min_width + PADDING)
                high = max(high, column.min_width + PADDING)
            if column.max_width is not None:
                low = min(low, column.max_width + PADDING)
                high = min(high, column.max_width + PADDING)
            out.append((low, high))
        return out

    widths = [high or 1 for _, high in ranges([available] * len(columns))]
    if sum(widths) <= available:
        return widths
    widths = _collapse(widths, available)
    if sum(widths) > available:  # rich's last resort: reduce every column evenly
        widths = ratio_reduce(sum(widths) - available, [1] * len(widths), widths, widths)
    return [high for _, high in ranges(widths)]


def _collapse(widths: list[int], max_width: int) -> list[int]:
    """``Table._collapse_widths`` with every column wrappable (none has a fixed width)."""
    total = sum(widths)
    excess = total - max_width
    while total and excess > 0:
        widest = max(widths)
        second = max((w for w in widths if w != widest), default=0)
        ratios = [1 if w == widest else 0 for w in widths]
        difference = widest - second
        if not difference:
            break
        widths = ratio_reduce(excess, ratios, [min(excess, difference)] * len(widths), widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def text_width(text: str) -> int:
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)
