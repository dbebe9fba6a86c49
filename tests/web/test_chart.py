"""The overview's SVG charts: scaled to the largest value, every point readable as data, and a
kind name is text, never markup."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from xml.etree import ElementTree

from migrate_cron.web.chart import LABEL, WIDTH, Bar, Series, bars, lines, nice_peak, runs_of


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


# ---------------------------------------------------------------------- lines over time
T0 = datetime(2026, 6, 1, 11, 0, tzinfo=UTC)
TIMES = [T0 + timedelta(minutes=i) for i in range(61)]
SVG = "{http://www.w3.org/2000/svg}"


def points(svg: str, series: str) -> list[tuple[str, float]]:
    root = ElementTree.fromstring(svg)
    return [
        (c.get("data-t", ""), float(c.get("data-v", "nan")))
        for c in root.iter(f"{SVG}circle")
        if c.get("data-series") == series
    ]


def test_every_point_carries_its_time_and_value() -> None:
    failed = tuple(5.0 if i == 42 else 0.0 for i in range(61))
    svg = lines("trend-x", "Runs per minute", TIMES, [Series("failed", failed, "lbad")], str)
    assert 'id="trend-x"' in svg
    got = points(svg, "failed")
    assert len(got) == 61 and got[42] == ("2026-06-01T11:42:00Z", 5.0)
    assert [v for _, v in got if v] == [5.0]
    root = ElementTree.fromstring(svg)
    assert root.find(f"{SVG}title").text == "Runs per minute"  # type: ignore[union-attr]
    assert root.get("aria-labelledby") == "trend-x-title trend-x-desc"


def test_axes_are_labelled_in_utc_with_units_and_a_legend() -> None:
    svg = lines("t", "age", TIMES, [Series("oldest ready", (90.0,) * 61, "l1", area=True)],
                lambda v: f"{v:g}s")  # fmt: skip
    texts = [t.text for t in ElementTree.fromstring(svg).iter(f"{SVG}text")]
    assert "oldest ready" in texts  # the legend
    assert {"0s", "50s", "100s"} <= set(texts)  # y: 0 to a rounded peak, with the unit
    assert {"11:00", "12:00"} <= set(texts)  # x: first and last bucket, clock time
    assert "<polygon" in svg  # the area under the line
    long = [T0 + timedelta(hours=6 * i) for i in range(121)]
    month = lines("m", "m", long, [Series("a", (1.0,) * 121, "l0")], str)
    assert "06-01 11:00" in month  # over more than a day: date and time


def test_gaps_break_the_line_and_an_empty_chart_says_so() -> None:
    values = (1.0, 2.0, None, None, 3.0, None)
    svg = lines("g", "p95", TIMES[:6], [Series("k p95", values, "l0")], str)
    assert svg.count("<polyline") == 2 and len(points(svg, "k p95")) == 3
    assert runs_of(values) == [[0, 1], [4]]
    assert "nothing in the window" in lines("e", "e", TIMES[:3], [Series("a", (0.0,) * 3, "l0")],
                                            str)  # fmt: skip
    assert nice_peak(0) == 1 and nice_peak(7) == 10 and nice_peak(130) == 200


def test_a_series_name_cannot_become_markup() -> None:
    svg = lines('"><script>', "<b>", TIMES[:2], [Series("<img src=x>", (1.0, 2.0), "l0")], str,
                summary="<i>")  # fmt: skip
    assert "<script>" not in svg and "<img" not in svg and "<b>" not in svg and "<i>" not in svg
    ElementTree.fromstring(svg)
