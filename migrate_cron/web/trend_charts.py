"""The overview's three trend charts, from the store's ``Trends`` to SVG (``chart.lines``).

Stable element ids (``trend-throughput``, ``trend-queue-age``, ``trend-runtime``) and each
point's ``data-t``/``data-v`` are what the browser test reads; the captions and ``<desc>``
say the same in words. Times are bucket starts (counts and run times belong to the bucket),
except the queue age, which is measured at each bucket's end.
"""

from __future__ import annotations

from datetime import datetime

from migrate_cron.store.models import Trends
from migrate_cron.web.chart import PALETTE, Series, lines

#: Kinds drawn on the run-time chart (the busiest); the others are named as left out.
RUNTIME_KINDS = 5


def step_words(step: int) -> str:
    """``minute``, ``10 minutes``, ``hour``, ``6 hours``, ``day``."""
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if step % size == 0:
            n = step // size
            return unit if n == 1 else f"{n} {unit}s"
    return f"{step} s"


def step_short(step: int) -> str:
    """The per-bucket unit on an axis: ``/min``, ``/10min``, ``/h``, ``/6h``, ``/d``."""
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if step % size == 0:
            n = step // size
            return f"/{unit}" if n == 1 else f"/{n}{unit}"
    return f"/{step}s"


def seconds_text(value: float) -> str:
    from migrate_cron.ops.durations import format_duration

    return "0" if value == 0 else format_duration(value)


def at_text(when: datetime) -> str:
    return f"{when:%Y-%m-%d %H:%M}Z"


def charts(trends: Trends) -> list[tuple[str, str]]:
    """(caption, svg) for throughput, queue age and run time, in that order."""
    grid = trends.grid
    starts = [grid.bucket_start(i) for i in range(grid.count)]
    ends = [grid.bucket_end(i) for i in range(grid.count)]
    per = step_words(grid.step)
    return [
        throughput(trends, starts, per),
        queue_age(trends, ends),
        runtime(trends, starts, per),
    ]


def throughput(trends: Trends, starts: list[datetime], per: str) -> tuple[str, str]:
    title = f"Runs done and failed per {per} (UTC)"
    failed = trends.failed
    summary = f"{sum(trends.done):,} runs done and {sum(failed):,} failed in the window"
    if any(failed):
        worst = max(range(len(failed)), key=lambda i: failed[i])
        summary += f"; most failures: {failed[worst]:,} in the {per} from {at_text(starts[worst])}"
    short = step_short(trends.grid.step)
    svg = lines(
        "trend-throughput",
        title,
        starts,
        [
            Series("done", tuple(float(v) for v in trends.done), "l0", area=True),
            Series("failed", tuple(float(v) for v in failed), "lbad", area=True),
        ],
        lambda v: f"{v:g}{short}",
        summary=summary + ".",
    )
    return title, svg


def queue_age(trends: Trends, ends: list[datetime]) -> tuple[str, str]:
    title = "Age of the oldest ready job (UTC)"
    ages = trends.queue_age
    peak = max(range(len(ages)), key=lambda i: ages[i]) if ages else None
    if peak is None or ages[peak] == 0:
        summary = "No job waited past its due time in the window."
    else:
        summary = (
            f"Oldest ready job: at most {seconds_text(ages[peak])} (at {at_text(ends[peak])}); "
            f"now {seconds_text(ages[-1])}."
        )
    svg = lines(
        "trend-queue-age",
        title,
        ends,
        [Series("oldest ready", ages, "l1", area=True)],
        seconds_text,
        summary=summary,
    )
    return title, svg


def runtime(trends: Trends, starts: list[datetime], per: str) -> tuple[str, str]:
    busiest = sorted(
        trends.runtime,
        key=lambda k: (-sum(p.runs for p in trends.runtime[k] if p is not None), k),
    )
    drawn = busiest[:RUNTIME_KINDS]
    about = "≈ " if trends.approximate else ""  # from histograms (``store/histogram.py``)
    title = f"Run time {about}p95 (solid) and {about}p50 (dashed) per kind and {per} (UTC)"
    series = []
    words = []
    for n, kind in enumerate(drawn):
        points = trends.runtime[kind]
        css = f"l{n % PALETTE}"
        p95 = tuple(p.p95 if p is not None else None for p in points)
        series.append(Series(f"{kind} p95", p95, css))
        series.append(
            Series(f"{kind} p50", tuple(p.p50 if p else None for p in points), css, dashed=True)
        )
        top = max((v for v in p95 if v is not None), default=None)
        words.append(f"{kind}: p95 up to {seconds_text(top or 0)}")
    summary = "; ".join(words) if words else "No run finished in the window"
    if len(busiest) > len(drawn):
        summary += f"; {len(busiest) - len(drawn)} quieter kinds not drawn"
    svg = lines("trend-runtime", title, starts, series, seconds_text, summary=summary + ".")
    return title, svg
