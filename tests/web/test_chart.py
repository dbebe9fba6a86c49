"""The overview's SVG charts: scaled to the largest value, and a kind name is text, never
markup."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from migrate_cron.web.chart import LABEL, WIDTH, Bar, bars


def widths(svg: str) -> list[float]:
    return [float(w) for w in re.findall(r'<rect [^>]*width="([\d.]+)"', svg)]


def test_bars_scale_to_the_largest_value() -> None:
    svg = bars("done", [Bar("a", (10.0,), "10"), Bar("b", (5.0,), "5")], ("done",))
    ElementTree.fromstring(svg)  # well-formed
    big, small = widths(svg)
    assert big <= WIDTH - LABEL and small == big / 2


def test_missing_values_draw_nothing_and_no_rows_say_so() -> None:
    svg = bars("p", [Bar("a", (None, 2.0), "2s")], ("p50", "p95"))
    assert len(widths(svg)) == 1
    assert "no data in the window" in bars("p", [], ("p50",))


def test_a_kind_name_cannot_become_markup() -> None:
    svg = bars(
        '<script>alert(1)</script>"', [Bar("<img src=x onerror=alert(1)>", (1.0,), "<b>")], ("x",)
    )
    assert "<script>" not in svg and "<img" not in svg and "<b>" not in svg
    ElementTree.fromstring(svg)
