"""Small inline SVG bar charts: no script, no asset, readable at phone width.

Pure functions from plain values to markup (escaped here, so a kind name can never become
markup), tested without a server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

ROW = 22
LABEL = 120
WIDTH = 360


@dataclass(frozen=True)
class Bar:
    label: str
    #: One value per series (e.g. p50 and p95); None is drawn as nothing.
    values: tuple[float | None, ...]
    text: str


def bars(title: str, rows: Sequence[Bar], series: Sequence[str]) -> str:
    """Horizontal bars, one row per item, the series stacked thin inside the row; scaled to
    the largest value. The ``title`` and the values are in the SVG's text, for screen
    readers and for tests."""
    peak = max((v for r in rows for v in r.values if v is not None), default=0.0) or 1.0
    span = WIDTH - LABEL - 70
    height = ROW * max(len(rows), 1) + 8
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    thickness = (ROW - 6) / max(len(series), 1)
    for i, row in enumerate(rows):
        y = 4 + i * ROW
        parts.append(
            f'<text x="0" y="{y + ROW / 2 + 4:.0f}" class="label">{escape(row.label[:18])}</text>'
        )
        for j, value in enumerate(row.values):
            if value is None:
                continue
            w = max(1.0, span * value / peak)
            parts.append(
                f'<rect x="{LABEL}" y="{y + 2 + j * thickness:.1f}" width="{w:.1f}" '
                f'height="{thickness - 1:.1f}" class="s{j}"/>'
            )
        parts.append(
            f'<text x="{WIDTH - 66}" y="{y + ROW / 2 + 4:.0f}" class="value">'
            f"{escape(row.text)}</text>"
        )
    if not rows:
        parts.append('<text x="0" y="18" class="label">no data in the window</text>')
    parts.append("</svg>")
    return "".join(parts)
