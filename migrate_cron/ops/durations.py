"""Durations the way operators type them: ``90s``, ``5m``, ``24h``, ``7d``, ``2w``, ``1h30m``.

One parser for every command (``status --since``, ``--max-age``, ``cleanup --done-older-than``,
``metrics --window``) so the same string means the same time everywhere. A bare number is
seconds. Months and years are refused: their length varies, and a retention policy that
silently means 28 or 31 days is a surprise nobody wants.
"""

from __future__ import annotations

import re

from migrate_cron.errors import UsageError

UNITS: dict[str, float] = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 7 * 86400.0,
}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")


def parse_duration(text: str, *, option: str = "duration") -> float:
    """Seconds in ``text``; raises UsageError naming ``option`` on anything else."""
    raw = text.strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", raw):
        return float(raw)
    if not raw or not _WHOLE.fullmatch(raw):
        raise UsageError(
            f"{option}: {text!r} is not a duration (use e.g. 90s, 5m, 24h, 7d, 2w or 1h30m)"
        )
    return sum(float(n) * UNITS[unit] for n, unit in _PART.findall(raw))


def format_duration(seconds: float | None) -> str:
    """A short human form: ``850ms``, ``42s``, ``7m 03s``, ``5m``, ``5h 20m``, ``3d 4h``, ``1d``;
    ``-`` for None."""
    if seconds is None:
        return "-"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s < 1:
        return f"{sign}{s * 1000:.0f}ms"
    if s < 60:
        return f"{sign}{s:.1f}s" if s < 10 else f"{sign}{s:.0f}s"
    total = round(s)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days}d {hours}h" if hours else f"{sign}{days}d"
    if hours:
        return f"{sign}{hours}h {minutes:02d}m" if minutes else f"{sign}{hours}h"
    return f"{sign}{minutes}m {secs:02d}s" if secs else f"{sign}{minutes}m"
