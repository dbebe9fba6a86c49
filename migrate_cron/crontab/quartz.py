"""Lines pasted from Quartz or a seconds-field scheduler (``0 */5 * * * * php …``).

Cron reads only the first five words as the schedule; an extra time field becomes the start of
the command. What happens then depends on the cron and the crontab kind (rejected, or run with a
command that is a glob or a number), and each case gets its own message here.
"""

from __future__ import annotations

import re

from migrate_cron.crontab.entry import Problem, Severity
from migrate_cron.crontab.fields import ScheduleError
from migrate_cron.crontab.flavour import Flavour
from migrate_cron.crontab.line_words import TOKEN, skip_blanks

_NAMES = "|".join(
    [
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "sat",
        "sun",
        "jan",
        "feb",
        "mar",
        "apr",
        "may",
        "jun",
        "jul",
        "aug",
        "sep",
        "oct",
        "nov",
        "dec",
    ]
)
_FIELD_LIKE = re.compile(
    rf"(?:[0-9*?]+[LW]?|L|LW)(?:[-/,#](?:[0-9*?]+[LW]?|{_NAMES}))*|"
    rf"(?:{_NAMES})(?:[-,#/](?:[0-9]+|{_NAMES}))+|\?",
    re.I,
)


def looks_like_field(token: str) -> bool:
    """True for tokens such as ``*``, ``0``, ``?``, ``1-5``, ``MON-FRI``: not a command name."""
    return bool(_FIELD_LIKE.fullmatch(token))


def quartz_extra(rest: str, expr: str) -> list[str] | None:
    """The extra time fields at the start of the command when the line looks pasted from
    Quartz or a seconds-field scheduler (``0 */5 * * * * php …``, ``0 30 2 * * ? cmd``), or
    None. Cron itself never sees more than five fields: what follows is the command."""
    token = TOKEN.match(rest)
    if token is None or expr.startswith("@") or not looks_like_field(token.group()):
        return None
    if not looks_like_field(expr.split(" ", 1)[0]):
        return None  # the first field is garbage: report the schedule itself
    extra = [token.group()]
    following = TOKEN.match(rest, skip_blanks(rest, token.end()))
    if following is not None and re.fullmatch(r"\*|\?|[0-9]{4}(-[0-9]{4})?", following.group()):
        extra.append(following.group())
    return extra


def _quartz_head(extra: list[str], expr: str) -> str:
    count = 5 + len(extra)
    return (
        f"{count} fields: looks like a Quartz or seconds-field expression pasted from another "
        f'scheduler ("{expr} {" ".join(extra)}"); cron reads only the first 5 as the schedule'
    )


def quartz_rejected(extra: list[str], expr: str, column: int, exc: ScheduleError) -> Problem:
    return Problem(
        "quartz",
        f"{_quartz_head(extra, expr)}, and rejects this line: {exc.reason}",
        column=column,
    )


def quartz_star(extra: list[str], expr: str, column: int, cron: Flavour) -> Problem:
    """Vixie-derived crons refuse a command that starts with ``*``: entry.c checks for it to
    "catch a common typo", which is what a pasted seconds field is."""
    return Problem(
        "quartz",
        f"{_quartz_head(extra, expr)}, so the command would start with "
        f'"{extra[0]}": {cron.label} rejects this line ("bad command", its check for exactly '
        "this mistake)",
        column=column,
    )


def quartz_user(extra: list[str], expr: str, column: int, user: str) -> Problem:
    return Problem(
        "quartz",
        f'{_quartz_head(extra, expr)} and "{user}" as the user name, which no account has: '
        'cron rejects this line ("bad username")',
        column=column,
        field="user",
    )


def quartz_runs(extra: list[str], expr: str, column: int, command: str, when: str) -> Problem:
    """What a user crontab really does with a pasted 6-field line: cron accepts it, runs it on
    the first five fields (``when``: their description), and hands the rest, extra field
    included, to the shell."""
    first = extra[0]
    if any(c in first for c in "*?["):
        what = (
            f'the shell expands "{first}" to the names of the files in the home directory and '
            "runs the first of them as a program (or fails with "
            f'"{first}: not found" when nothing matches)'
        )
    else:
        what = f'the shell looks for a program called "{first}" and fails ("{first}: not found")'
    return Problem(
        "quartz",
        f"{_quartz_head(extra, expr)}: cron accepts it, runs it {when} and "
        f'runs the command "{command.strip()}": {what}; the intended command never runs',
        Severity.ERROR,
        column=column,
    )
