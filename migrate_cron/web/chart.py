"""Small inline SVG charts (bars per kind, lines over time): no script, no asset, no inline
style (the CSP forbids both; colours are classes in static/style.css), readable at phone width.

Pure functions from plain values to markup (escaped here, so a kind name can never become
markup), tested without a server.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
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


# ---------------------------------------------------------------------- lines over time
LINE_WIDTH = 640
LINE_HEIGHT = 200
LEFT, RIGHT, TOP, BOTTOM = 58, 10, 26, 24
#: Series classes in style.css (``.trend .l0`` …): a colour each, in legend order.
PALETTE = 6


@dataclass(frozen=True)
class Series:
    """One line over the chart's buckets: ``values[i]`` belongs to ``times[i]``; None leaves a
    gap (nothing happened there). ``area`` fills below the line; ``dashed`` draws it dashed
    (a kind's p50 beside its solid p95, in the same colour); ``css`` picks its colour class."""

    name: str
    values: tuple[float | None, ...]
    css: str
    area: bool = False
    dashed: bool = False


def lines(
    chart_id: str,
    title: str,
    times: Sequence[datetime],
    series: Sequence[Series],
    unit: Callable[[float], str],
    *,
    summary: str = "",
) -> str:
    """A line/area chart over time, drawn server-side: y from 0 to a rounded peak with three
    labelled ticks (``unit`` formats a value), x labelled in UTC, a legend, and a
    ``<title>``/``<desc>`` that say what a screen reader needs (``summary``). Each data point
    is a ``<circle>`` carrying ``data-t`` (ISO time, UTC) and ``data-v`` (the value), for a
    browser test to read the chart as data."""
    width, height = LINE_WIDTH, LINE_HEIGHT
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    peak = nice_peak(max((v for s in series for v in s.values if v is not None), default=0.0))
    n = len(times)

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h - plot_h * v / peak

    eid = escape(chart_id)
    parts = [
        f'<svg id="{eid}" class="chart trend" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="{eid}-title {eid}-desc" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{eid}-title">{escape(title)}</title>',
        f'<desc id="{eid}-desc">{escape(summary)}</desc>',
    ]
    for frac in (0.0, 0.5, 1.0):
        ty = y(peak * frac)
        parts.append(
            f'<line x1="{LEFT}" x2="{width - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" class="grid"/>'
            f'<text x="{LEFT - 4}" y="{ty + 4:.1f}" class="axis" text-anchor="end">'
            f"{escape(unit(peak * frac))}</text>"
        )
    for i in x_ticks(n):
        # The last label ends at its point, so it is not cut by the chart's right edge.
        anchor = "end" if i == n - 1 and n > 1 else "middle"
        parts.append(
            f'<text x="{x(i):.1f}" y="{height - 6}" class="axis" text-anchor="{anchor}">'
            f"{escape(time_label(times, i))}</text>"
        )
    lx = LEFT
    for s in series:
        parts.append(
            f'<rect x="{lx}" y="6" width="10" height="10" class="key {escape(s.css)}"/>'
            f'<text x="{lx + 14}" y="15" class="label">{escape(s.name)}</text>'
        )
        lx += 24 + 7 * len(s.name)
    for s in series:
        css = escape(s.css)
        for run in runs_of(s.values):
            points = " ".join(f"{x(i):.1f},{y(s.values[i] or 0.0):.1f}" for i in run)
            if s.area:
                base = f"{x(run[-1]):.1f},{y(0):.1f} {x(run[0]):.1f},{y(0):.1f}"
                parts.append(f'<polygon points="{points} {base}" class="area {css}"/>')
            dash = " dashed" if s.dashed else ""
            parts.append(f'<polyline points="{points}" class="line {css}{dash}"/>')
        for i, v in enumerate(s.values):
            if v is None:
                continue
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="1.6" class="point {css}" '
                f'data-series="{escape(s.name)}" data-t="{times[i]:%Y-%m-%dT%H:%M:%SZ}" '
                f'data-v="{v:g}"/>'
            )
    if not any(v for s in series for v in s.values):
        parts.append(
            f'<text x="{LEFT + 8}" y="{TOP + 16}" class="label">nothing in the window</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def nice_peak(value: float) -> float:
    """The y axis's top: 1, 2 or 5 times a power of ten at or above ``value`` (1 for 0)."""
    if value <= 0:
        return 1.0
    scale = 10 ** math.floor(math.log10(value))
    return float(next(m * scale for m in (1, 2, 5, 10) if m * scale >= value))


def x_ticks(n: int, count: int = 5) -> list[int]:
    """Indexes of the buckets labelled on the x axis: the first, the last, evenly between."""
    if n <= 1:
        return list(range(n))
    return sorted({round(k * (n - 1) / (count - 1)) for k in range(count)})


def time_label(times: Sequence[datetime], i: int) -> str:
    """A bucket's time, as precise as the chart needs: the clock within a day, the date and
    hour over longer windows, the date alone for daily buckets."""
    span = (times[-1] - times[0]).total_seconds() if len(times) > 1 else 0
    step = (times[1] - times[0]).total_seconds() if len(times) > 1 else 0
    if step >= 86400:
        return f"{times[i]:%m-%d}"
    if span > 86400:
        return f"{times[i]:%m-%d %H:%M}"
    return f"{times[i]:%H:%M}"


def runs_of(values: Sequence[float | None]) -> list[list[int]]:
    """The stretches of consecutive buckets with a value (a line breaks at a gap)."""
    out: list[list[int]] = []
    current: list[int] = []
    for i, v in enumerate(values):
        if v is None:
            if current:
                out.append(current)
            current = []
        else:
            current.append(i)
    if current:
        out.append(current)
    return out
