"""Crontab files, read line by line the way Vixie/Debian cron reads them.

Guarantees: ``parse_crontab`` never raises on content (any text, any bytes); every physical line
becomes exactly one :class:`CrontabLine` with its number and its raw text; a line cron would
reject becomes ``Kind.INVALID`` with a :class:`Problem` naming the column or field and the reason,
and the lines after it are read normally.

The order of decisions follows cron's ``load_database``/``load_env``/``load_entry``:

1. blank (only spaces/tabs) and comment lines (``#`` as first non-blank) are skipped — a line
   holding only a carriage return is *not* blank for cron;
2. an environment assignment is tried first: ``NAME = VALUE`` with optional blanks around ``=``,
   the name and the value each optionally in single or double quotes (quotes only strip, nothing
   is expanded), an unquoted value loses its trailing blanks, a quoted value may only be
   followed by blanks;
3. otherwise the line is a job: five fields (or an @macro), in system crontabs a user name, then
   the command up to the end of the line. In the command the first unescaped ``%`` ends the
   command and the rest is the job's stdin (``%`` → newline, ``\\%`` → ``%``), exactly as
   ``do_command.c`` does it.

Which cron reads the file (``cron``: debian, cronie, busybox; see ``crontab.flavour``) decides
the places where they differ: ``CRON_TZ`` sets the schedule zone only for cronie (``TZ`` never
does: it only reaches the command's environment); cronie's ``a~b`` random values; busybox's
``N/S``; and whether one bad line or a missing final newline makes the daemon ignore the whole
file (Debian, for system crontabs: a file-level ``file-ignored`` problem).

This module holds the order of those decisions; each reading it applies has its own module:
``line_words`` (where the fields end), ``line_ends`` (carriage returns, a trailing backslash),
``env_line``, ``percent``, ``user_field``, ``quartz`` (a pasted sixth field), ``flavour_reads``
(where the crons differ) and ``file_format`` (user or system crontab, when the caller does not
say).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from migrate_cron.crontab.entry import (
    ENCODING,
    ERRORS,
    CrontabFile,
    CrontabLine,
    Kind,
    Problem,
    Severity,
)
from migrate_cron.crontab.env_line import env_problems, parse_env, zone_not_schedule
from migrate_cron.crontab.fields import MACRO_NAMES, ScheduleError
from migrate_cron.crontab.file_format import (
    choose_format,
    could_be_user,
    format_from_path,
    job_words,
)
from migrate_cron.crontab.flavour import Flavour, flavour
from migrate_cron.crontab.flavour_reads import as_flavour_reads, whole_file_problems
from migrate_cron.crontab.gc_pause import gc_paused
from migrate_cron.crontab.line_ends import continued, cr_problem, with_problem
from migrate_cron.crontab.line_limits import (
    BadEnv,
    env_line_problem,
    job_line_problems,
    undecodable_env,
)
from migrate_cron.crontab.line_words import BLANKS, FIVE, MACRO, TOKEN, skip_blanks
from migrate_cron.crontab.percent import split_percent
from migrate_cron.crontab.quartz import (
    quartz_extra,
    quartz_rejected,
    quartz_runs,
    quartz_star,
    quartz_user,
)
from migrate_cron.crontab.schedule import Schedule
from migrate_cron.crontab.user_field import can_be_user


@dataclass
class _State:
    """What cron carries from line to line: the environment so far and the timezone; which
    cron reads the file."""

    env: dict[str, str]
    timezone: str | None
    cron: Flavour
    #: One string per distinct schedule: a big file repeats a few thousand over 100,000 lines.
    schedules: dict[str, str] = field(default_factory=dict)
    #: The line that last set each env name, and the first name in ``env`` (but CRON_TZ)
    #: the registry cannot keep (not UTF-8, a NUL byte: the jobs below it are not registered).
    env_lines: dict[str, int] = field(default_factory=dict)
    bad_env: BadEnv | None = None


def parse_crontab(
    data: str | bytes,
    path: str = "-",
    *,
    format: str = "auto",
    host: str | None = None,
    cron: str = "debian",
) -> CrontabFile:
    """Parse a whole file. ``format`` is "user", "system" or "auto" (decided per file);
    ``cron`` which daemon reads it ("debian", "cronie", "busybox")."""
    with gc_paused():
        return _parse_crontab(data, path, format, host, flavour(cron))


def _parse_crontab(
    data: str | bytes, path: str, format: str, host: str | None, cron: Flavour
) -> CrontabFile:
    text = data.decode(ENCODING, ERRORS) if isinstance(data, bytes) else data
    pieces = text.split("\n")
    raws = [p + "\n" for p in pieces[:-1]]
    if pieces[-1]:
        raws.append(pieces[-1])
    chosen, reason = choose_format(path, job_words(raws), format)
    state = _State(env={}, timezone=None, cron=cron)
    lines = [
        _parse_line(raw, number, path, chosen == "system", state)
        for number, raw in enumerate(raws, start=1)
    ]
    file_problems: tuple[Problem, ...] = ()
    if raws and not raws[-1].endswith("\n"):
        problem = Problem(
            "missing-newline",
            "the last line has no newline: crontab refuses to install this file "
            '("missing newline before EOF"); add a newline at the end',
            Severity.ERROR,
        )
        last = lines[-1]
        lines[-1] = with_problem(last, problem)
        file_problems = (problem,)
    lines = [continued(line) for line in lines]
    if chosen == "system":
        file_problems += whole_file_problems(lines, cron)
    return CrontabFile(
        path=path,
        lines=tuple(lines),
        format=chosen,
        format_reason=reason,
        format_inferred=format not in ("user", "system")
        and format_from_path(path) is None
        and could_be_user(job_words(raws)),
        host=host,
        problems=file_problems,
    )


def read_crontab(
    path: str, *, format: str = "auto", host: str | None = None, cron: str = "debian"
) -> CrontabFile:
    """Read and parse a file; OSError (missing, unreadable) propagates to the caller."""
    with open(path, "rb") as handle:
        data = handle.read()
    return parse_crontab(data, path, format=format, host=host, cron=cron)


# -- one line ------------------------------------------------------------------------------


def _parse_line(raw: str, number: int, path: str, system: bool, state: _State) -> CrontabLine:
    text = raw[:-1] if raw.endswith("\n") else raw
    start = len(text) - len(text.lstrip(BLANKS))
    if start == len(text):
        return CrontabLine(path, number, raw, Kind.BLANK)
    if text[start] == "#":
        return CrontabLine(path, number, raw, Kind.COMMENT)
    assignment = parse_env(text)
    if assignment is not None:
        return _env_line(raw, number, path, assignment, state)
    return _job_line(raw, text, start, number, path, system, state)


def _env_line(
    raw: str, number: int, path: str, assignment: tuple[str, str], state: _State
) -> CrontabLine:
    name, value = assignment
    problems: list[Problem] = []
    env = dict(state.env)
    env[name] = value
    state.env = env  # a new dict: lines above keep the one they saw
    state.env_lines[name] = number
    state.bad_env = undecodable_env(env, state.env_lines)
    if name == "CRON_TZ" and state.cron.cron_tz:
        if _zone_ok(value):
            state.timezone = value
        else:
            state.timezone = None
            problems.append(
                Problem(
                    "bad-timezone",
                    f'{name}="{value}" is not a known IANA zone: the jobs below run in the '
                    "host's zone instead; use a name such as Europe/Berlin",
                    Severity.ERROR,
                    column=skip_blanks(raw, 0) + 1,
                    field="timezone",
                )
            )
    elif name in ("CRON_TZ", "TZ"):
        problems.append(zone_not_schedule(name, value, state.cron, skip_blanks(raw, 0) + 1))
    if "\r" in value:
        problems.append(cr_problem())
    problems.extend(env_problems(name, value, skip_blanks(raw, 0) + 1))
    undecodable = env_line_problem(raw.rstrip("\n"), name)
    if undecodable is not None:
        problems.append(undecodable)
    return CrontabLine(
        path,
        number,
        raw,
        Kind.ENV,
        env=env,
        env_name=name,
        env_value=value,
        problems=tuple(problems),
    )


def _job_line(
    raw: str, text: str, start: int, number: int, path: str, system: bool, state: _State
) -> CrontabLine:
    body = text[start:]
    if body.strip(BLANKS) == "\r":
        return _invalid(raw, number, path, cr_problem(only=True))
    if body.startswith("@"):
        match = MACRO.match(body)
        assert match is not None
        expr, rest = match.group(1), match.group(2) or ""
        columns = [start + 1]
        if expr[1:] not in MACRO_NAMES:
            known = " ".join("@" + n for n in MACRO_NAMES)
            return _invalid(
                raw,
                number,
                path,
                Problem(
                    "bad-macro", f'unknown macro "{expr}" (cron knows {known})', column=start + 1
                ),
            )
        rest_column = start + match.start(2) + 1 if match.group(2) is not None else len(text) + 1
    else:
        match = FIVE.match(body)
        if match is None:
            words = TOKEN.findall(body)
            message = (
                f"{len(words)} field{'s' if len(words) != 1 else ''}: a job needs 5 time fields "
                "and a command (or an @macro and a command), and this is not a NAME=value line"
            )
            if re.fullmatch(r"[A-Za-z]+", words[0]):
                message += " — this reads like text: is it a comment without # at the start?"
            return _invalid(raw, number, path, Problem("too-few-fields", message, column=start + 1))
        expr = " ".join(match.group(1, 2, 3, 4, 5))
        columns = [start + 1]  # the other fields' columns only matter for an error, below
        rest = match.group(6) or ""
        rest_column = start + match.start(6) + 1 if match.group(6) is not None else len(text) + 1
    expr, flavour_problems = as_flavour_reads(expr, state.cron, columns[0])
    expr = state.schedules.setdefault(expr, expr)
    quartz = quartz_extra(rest, expr)
    try:
        _schedule(expr, state.timezone)
    except ScheduleError as exc:
        if quartz is not None:
            return _invalid(raw, number, path, quartz_rejected(quartz, expr, rest_column, exc))
        if match.re is FIVE:
            columns = [start + match.start(i) + 1 for i in range(1, 6)]
        column = columns[exc.index] if exc.index is not None else columns[0]
        reason = exc.reason
        if re.fullmatch(r"[A-Za-z]+", expr.split(" ", 1)[0]):
            reason += " — this reads like text: is it a comment without # at the start?"
        return _invalid(
            raw, number, path, Problem("bad-schedule", reason, column=column, field=exc.field)
        )
    star = quartz is not None and quartz[0].startswith("*")
    if (
        star
        and state.cron.star_command_rejected
        and not (system and state.cron.user_before_star_check)
    ):
        assert quartz is not None
        return _invalid(raw, number, path, quartz_star(quartz, expr, rest_column, state.cron))
    user: str | None = None
    user_column = rest_column
    if system:
        user_match = TOKEN.match(rest)
        if user_match is None:
            return _invalid(
                raw,
                number,
                path,
                Problem(
                    "no-user",
                    "no user field: in a system crontab a job is "
                    "minute hour day-of-month month day-of-week USER command",
                    column=rest_column,
                    field="user",
                ),
            )
        user = user_match.group()
        user_column = rest_column
        if not can_be_user(user):
            return _invalid(
                raw,
                number,
                path,
                Problem(
                    "no-user",
                    f"no user field: `{user}` stands where a system crontab line names its "
                    "user (minute hour day-of-month month day-of-week USER command), so the "
                    "command lost its first word; Debian's cron rejects the line (bad "
                    "username), cronie keeps it for a user that does not exist: it never runs",
                    column=rest_column,
                    field="user",
                ),
            )
        after = skip_blanks(rest, user_match.end())
        rest_column += after
        rest = rest[after:]
    if not rest.strip(BLANKS):
        return _invalid(
            raw,
            number,
            path,
            Problem(
                "no-command",
                "no command after the schedule" + (" and user" if system else ""),
                column=rest_column,
                field="command",
            ),
        )
    if quartz is not None and system:
        return _invalid(raw, number, path, quartz_user(quartz, expr, user_column, user or ""))
    command, stdin = split_percent(rest)
    problems: tuple[Problem, ...] = flavour_problems
    if quartz is not None:
        problems += (quartz_runs(quartz, expr, rest_column, command, _describe(expr)),)
    if text.endswith("\r"):
        problems += (cr_problem(),)
    line = CrontabLine(
        path,
        number,
        raw,
        Kind.JOB,
        schedule=expr,
        user=user,
        command=command,
        stdin=stdin,
        env=state.env,
        timezone=state.timezone,
        problems=problems,
    )
    limits = job_line_problems(line, state.bad_env)
    return replace(line, problems=problems + limits) if limits else line


def _describe(expr: str) -> str:
    try:
        return _schedule(expr, None).describe()
    except ScheduleError:  # pragma: no cover - only called after the schedule parsed
        return expr


def _invalid(raw: str, number: int, path: str, problem: Problem) -> CrontabLine:
    return CrontabLine(path, number, raw, Kind.INVALID, problems=(problem,))


@lru_cache(maxsize=65536)
def _schedule(expr: str, timezone: str | None) -> Schedule:
    return Schedule.parse(expr, timezone or "UTC", allow_reboot=True)


@lru_cache(maxsize=256)
def _zone_ok(name: str) -> bool:
    try:
        Schedule.parse("0 0 * * *", name)
    except ScheduleError:
        return False
    return True


__all__ = ["parse_crontab", "read_crontab"]
