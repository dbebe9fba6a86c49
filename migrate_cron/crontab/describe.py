"""Cron fields in plain English ("every 5 minutes", "at 02:30 on Monday to Friday").

The wording is built from the expanded sets, never from the text, so ``*/15`` and
``0,15,30,45`` read the same, and the day rule says "or" exactly when cron uses OR.
"""

from __future__ import annotations

from migrate_cron.crontab.fields import MONTH_TITLES, CronFields

_DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTH_NAMES = MONTH_TITLES


def describe(fields: CronFields) -> str:
    """One phrase: time of day, then days, then months."""
    time_part = _time_phrase(fields)
    day_part = _day_phrase(fields)
    if day_part == "every day" and time_part.startswith("every"):
        day_part = ""  # "every 5 minutes", not "every 5 minutes every day"
    parts = [time_part, day_part]
    months = _month_phrase(fields)
    if months:
        parts.append(months)
    return " ".join(p for p in parts if p)


def _time_phrase(f: CronFields) -> str:
    minutes, hours = f.minutes, f.hours
    all_hours = len(hours) == 24
    step = _even_step(minutes, 60)
    if len(minutes) == 60:
        return "every minute" if all_hours else f"every minute {_hours_span(hours)}"
    if step and step > 1:
        every = f"every {step} minutes"
        return every if all_hours else f"{every} {_hours_span(hours)}"
    if all_hours:
        return "every hour at " + _join_words([f":{m:02d}" for m in minutes])
    if len(minutes) * len(hours) <= 6:
        return "at " + _join_words([f"{h:02d}:{m:02d}" for h in hours for m in minutes])
    hour_step = _even_step(hours, 24)
    mins = _join_words([f":{m:02d}" for m in minutes])
    if hour_step and hour_step > 1:
        return f"every {hour_step} hours at {mins}"
    return f"at {mins} past hours {_ranges(hours)}"


def _hours_span(hours: tuple[int, ...]) -> str:
    runs = _runs(hours)
    if len(runs) == 1:
        low, high = runs[0]
        if low == high:
            return f"during {low:02d}:00-{low:02d}:59"
        return f"from {low:02d}:00 to {high:02d}:59"
    return "during hours " + _ranges(hours)


def _day_phrase(f: CronFields) -> str:
    all_days = len(f.days) == 31
    all_weekdays = len(f.weekdays) == 7
    dom = _dom_words(f.days)
    dow = _dow_words(f.weekdays)
    if f.day_or:
        if all_days or all_weekdays:
            return "every day"
        return f"on {dom} and on every {dow}"
    if all_days and all_weekdays:
        return "every day"
    if all_days:
        return f"on {dow}"
    if all_weekdays:
        return f"on {dom}"
    return f"on {dom} if it is a {dow}"


def _dom_words(days: tuple[int, ...]) -> str:
    step = _even_step(days, 31, start=1)
    if step == 2:
        return "odd days of the month"
    if step and step > 1:
        return f"every {_ordinal(step)} day of the month"
    label = "day" if len(days) == 1 else "days"
    return f"{label} {_ranges(days)} of the month"


def _dow_words(weekdays: tuple[int, ...]) -> str:
    if weekdays == (1, 2, 3, 4, 5):
        return "Monday to Friday"
    if weekdays == (0, 6):
        return "Saturday and Sunday"
    runs = _runs(weekdays)
    words = [
        _DAY_NAMES[a] if a == b else f"{_DAY_NAMES[a]} to {_DAY_NAMES[b]}"
        for a, b in runs
        if b - a != 1
    ] + [w for a, b in runs if b - a == 1 for w in (_DAY_NAMES[a], _DAY_NAMES[b])]
    ordered = sorted(words, key=lambda w: _DAY_NAMES.index(w.split()[0]))
    return _join_words(ordered, "or")


def _month_phrase(f: CronFields) -> str:
    if len(f.months) == 12:
        return ""
    runs = _runs(f.months)
    words = [
        _MONTH_NAMES[a] if a == b else f"{_MONTH_NAMES[a]} to {_MONTH_NAMES[b]}" for a, b in runs
    ]
    return "in " + _join_words(words)


def _even_step(values: tuple[int, ...], size: int, start: int = 0) -> int | None:
    """The step when values are exactly start, start+s, … up to the field's end."""
    if len(values) < 2 or values[0] != start:
        return None
    step = values[1] - values[0]
    expected = tuple(range(start, start + size, step))
    return step if values == expected else None


def _runs(values: tuple[int, ...]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _ranges(values: tuple[int, ...]) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in _runs(values))


def _join_words(words: list[str], last: str = "and") -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + f" {last} " + words[-1]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
