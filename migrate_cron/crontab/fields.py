"""The five time fields of a cron line, parsed the way Vixie/Debian cron parses them.

We validate here ourselves instead of trusting croniter's parser because croniter is more
lenient than cron in places that change meaning (it reads ``5-5`` as "every", accepts ``5/15``
and Quartz ``?``/``L``/``#``, and decides the day-of-month/day-of-week OR rule from the expanded
sets rather than from the text). What cron rejects we reject, with the field and a reason a user
can act on; what cron accepts we expand to plain sets of numbers, so later stages never re-read
the text.

Rules taken from Vixie cron 3.0 ``entry.c`` (the code Debian's cron package still ships):

* a field is a comma list of ``*``, ``N``, ``N-M``, ``*/S`` or ``N-M/S``; ``N/S`` is not accepted;
* month and day-of-week accept three-letter English names, case-insensitively (``jan``, ``Mon``);
* day of week runs 0-7 and both 0 and 7 are Sunday (``*/2`` over 0-7 gives Sun, Tue, Thu, Sat);
* a field "is a star" when its text *starts with* ``*`` (``*/2`` counts) — that flag, not the set,
  decides whether day-of-month and day-of-week combine with OR (neither is a star) or AND;
* the @macros expand to the five fields below, with the same star flags cron sets for them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class ScheduleError(ValueError):
    """A schedule cron would not accept (or would silently never run).

    ``field`` names the offending field ("minute", "day of week", "timezone"…) or is None when
    the expression as a whole is wrong; ``reason`` is the one-line message shown to the user,
    e.g. ``bad minute "60" (minute is 0-59)``.
    """

    def __init__(self, reason: str, field: str | None = None, index: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        #: 0-4 for the five time fields, so a file parser can point at the column.
        self.index = index


@dataclass(frozen=True)
class FieldSpec:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # index + low == value
    hint: str = ""


MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DOW_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")

SPECS = (
    FieldSpec("minute", 0, 59, hint="minute is 0-59"),
    FieldSpec("hour", 0, 23, hint="hour is 0-23"),
    FieldSpec("day of month", 1, 31, hint="day of month is 1-31"),
    FieldSpec("month", 1, 12, MONTH_NAMES, hint="month is 1-12 or jan-dec"),
    FieldSpec(
        "day of week", 0, 7, DOW_NAMES, hint="day of week is 0-7 (0 and 7 are Sunday) or sun-sat"
    ),
)

#: What each macro means, as cron expands it (Vixie ``entry.c``); @reboot has no schedule.
MACROS: dict[str, str] = {
    "yearly": "0 0 1 1 *",
    "annually": "0 0 1 1 *",
    "monthly": "0 0 1 * *",
    "weekly": "0 0 * * 0",
    "daily": "0 0 * * *",
    "midnight": "0 0 * * *",
    "hourly": "0 * * * *",
}
MACRO_NAMES = ("reboot", *MACROS)

_DIGITS = re.compile(r"[0-9]+")
_BLANKS = re.compile(r"[ \t]+")
_QUARTZ_ONLY = re.compile(r"[?LW#]")
_MAX_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
MONTH_TITLES = (
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True)
class CronFields:
    """The expanded sets of one five-field schedule plus cron's "starts with *" flags.

    Day-of-week values are 0-6 (7 already folded into 0). Tuples are sorted ascending.
    """

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]
    months: tuple[int, ...]
    weekdays: tuple[int, ...]
    minute_star: bool
    hour_star: bool
    day_star: bool
    weekday_star: bool

    @property
    def day_or(self) -> bool:
        """Cron's rule: a day matches either field only when *neither* field text starts with *."""
        return not (self.day_star or self.weekday_star)

    @property
    def fixed_time(self) -> bool:
        """Cron's "fixed-time job": neither minute nor hour starts with * (DST handling differs)."""
        return not (self.minute_star or self.hour_star)


def split_fields(text: str) -> list[str]:
    """Split on cron's blanks (spaces and tabs only)."""
    return [tok for tok in _BLANKS.split(text) if tok]


def parse_fields(tokens: list[str]) -> CronFields:
    """Expand five field texts; raise ScheduleError naming the first bad field."""
    sets = [_parse_field(tok, SPECS[i], i) for i, tok in enumerate(tokens)]
    weekdays = tuple(sorted({d % 7 for d in sets[4]}))
    fields = CronFields(
        minutes=tuple(sorted(sets[0])),
        hours=tuple(sorted(sets[1])),
        days=tuple(sorted(sets[2])),
        months=tuple(sorted(sets[3])),
        weekdays=weekdays,
        minute_star=tokens[0].startswith("*"),
        hour_star=tokens[1].startswith("*"),
        day_star=tokens[2].startswith("*"),
        weekday_star=tokens[4].startswith("*"),
    )
    _check_possible(fields, tokens)
    return fields


def _check_possible(fields: CronFields, tokens: list[str]) -> None:
    """Cron accepts ``0 0 30 2 *`` and then never runs it; we say so instead."""
    if fields.day_or:
        return  # the day-of-week side still matches
    if min(fields.days) > max(_MAX_DAYS[m] for m in fields.months):
        months = ", ".join(MONTH_TITLES[m] for m in fields.months)
        raise ScheduleError(
            f'day of month "{tokens[2]}" never occurs in {months}: cron would never run this',
            field="day of month",
            index=2,
        )


def _parse_field(text: str, spec: FieldSpec, index: int) -> set[int]:
    if text == "*":
        return set(range(spec.low, spec.high + 1))
    if text.isdigit() and text.isascii():
        value = int(text)
        if spec.low <= value <= spec.high:
            return {value}
    values: set[int] = set()
    for part in text.split(","):
        values.update(_parse_part(part, text, spec, index))
    return values


def _bad(text: str, spec: FieldSpec, index: int, why: str = "") -> ScheduleError:
    return ScheduleError(
        f'bad {spec.name} "{text}" ({why or spec.hint})', field=spec.name, index=index
    )


def _parse_part(part: str, text: str, spec: FieldSpec, index: int) -> range:
    if part == "":
        raise _bad(text, spec, index, "empty element in a comma list")
    quartz = _QUARTZ_ONLY.search(part) and next(
        (
            m
            for tok in re.split(r"[-/]", part)
            if (m := _QUARTZ_ONLY.search(tok)) and tok.lower() not in spec.names
        ),
        None,
    )
    if quartz:
        char = quartz.group()
        what = (
            '"?" is Quartz syntax, cron uses "*"'
            if char == "?"
            else (f'"{char}" is Quartz/cronie syntax that Debian cron does not understand')
        )
        raise ScheduleError(f'bad {spec.name} "{text}": {what}', spec.name, index)
    base, slash, step_text = part.partition("/")
    step = 1
    if slash:
        if not _DIGITS.fullmatch(step_text):
            raise _bad(text, spec, index, f'step "{step_text}" is not a number')
        step = int(step_text)
        if step == 0:
            raise _bad(text, spec, index, "a step must be 1 or more")
    if base == "*":
        return range(spec.low, spec.high + 1, step)
    first, dash, last = base.partition("-")
    low = _number(first, text, spec, index)
    if not dash:
        if slash:
            raise ScheduleError(
                f"{part} is not valid cron syntax (use {first}-{spec.high}/{step_text})",
                field=spec.name,
                index=index,
            )
        return range(low, low + 1)
    high = _number(last, text, spec, index)
    if low > high:
        raise _bad(
            text,
            spec,
            index,
            f"range {base} runs backwards and cron would never match it; "
            f"write {first}-{spec.high},{spec.low}-{last}",
        )
    return range(low, high + 1, step)


def _number(token: str, text: str, spec: FieldSpec, index: int) -> int:
    if _DIGITS.fullmatch(token):
        value = int(token)
        if spec.low <= value <= spec.high:
            return value
        raise _bad(token if token == text else text, spec, index)
    lowered = token.lower()
    if spec.names and lowered in spec.names:
        return spec.names.index(lowered) + spec.low
    if spec.names and len(token) > 3 and lowered[:3] in spec.names:
        raise _bad(text, spec, index, f'use the three-letter name "{lowered[:3]}"')
    raise _bad(text, spec, index)
