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
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
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
from migrate_cron.crontab.fields import MACRO_NAMES, MACROS, SPECS, ScheduleError
from migrate_cron.crontab.file_format import choose_format, could_be_user, format_from_path
from migrate_cron.crontab.flavour import (
    Flavour,
    flavour,
    random_parts,
    single_steps,
    without_random,
    without_single_steps,
)
from migrate_cron.crontab.line_limits import (
    env_line_problem,
    job_line_problems,
    undecodable_env,
)
from migrate_cron.crontab.schedule import Schedule

FORMATS = ("auto", "user", "system")

_BLANKS = " \t"
_FIVE = re.compile(
    r"([^ \t]+)[ \t]+([^ \t]+)[ \t]+([^ \t]+)[ \t]+([^ \t]+)[ \t]+([^ \t]+)(?:[ \t]+(.*))?\Z",
    re.S,
)
_MACRO = re.compile(r"(@[^ \t]*)(?:[ \t]+(.*))?\Z", re.S)
_TOKEN = re.compile(r"[^ \t]+")
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
    #: whose line is not UTF-8 (the registry cannot keep the jobs below it).
    env_lines: dict[str, int] = field(default_factory=dict)
    bad_env: tuple[str, int] | None = None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while bulk-building acyclic values.

    Parsing and analysing a 100,000-line crontab allocates millions of small objects (lines,
    jobs, findings) and no reference cycles; the collector would re-scan the growing heap again
    and again (a third of the CPU time of ``analyze``), and free nothing. Reference counting
    still frees everything as usual; the collector resumes afterwards if it was on.

    On the way out everything the collector tracks moves to its oldest generation (freeze, then
    unfreeze): left in the youngest, the whole bulk would be scanned at the next allocation and
    again one generation up (0.1 s after analysing 35,000 jobs) only to be promoted. Nothing is
    hidden from the collector: the oldest generation is still scanned by full collections.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


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
    chosen, reason = choose_format(path, _job_words(raws), format)
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
        lines[-1] = _with_problem(last, problem)
        file_problems = (problem,)
    lines = [_continued(line) for line in lines]
    if chosen == "system":
        file_problems += _whole_file_problems(lines, cron)
    return CrontabFile(
        path=path,
        lines=tuple(lines),
        format=chosen,
        format_reason=reason,
        format_inferred=format not in ("user", "system")
        and format_from_path(path) is None
        and could_be_user(_job_words(raws)),
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


def _whole_file_problems(lines: list[CrontabLine], cron: Flavour) -> tuple[Problem, ...]:
    """Debian's cron reads a system crontab (/etc/crontab, cron.d) all or nothing: on the
    first line it rejects it logs "Syntax error, this crontab file will be ignored", and
    without a final newline "Missing newline before EOF, this crontab file will be ignored"
    (both messages are in the daemon, cron 3.0pl1); not one line of the file runs."""
    bad = next((line for line in lines if line.kind is Kind.INVALID), None)
    unterminated = bool(lines) and not lines[-1].raw.endswith("\n")
    if bad is not None and cron.rejects_whole_file:
        why = f"line {bad.number} is rejected ({bad.problems[0].message})"
    elif unterminated and cron.newline_rejects_file:
        why = "its last line has no newline"
    else:
        return ()
    return (
        Problem(
            "file-ignored",
            f"{cron.label} ignores this whole file, so none of its lines runs: {why}; "
            'the daemon logs "this crontab file will be ignored" and runs nothing from it',
            Severity.ERROR,
        ),
    )


#: Words that are surely not a user name: the shell's own words and the programs a command
#: starts with. A name in this set that is a user on this host is taken as one.
_NOT_USERS = frozenset(
    (
        "cd",
        "test",
        "[",
        "echo",
        "export",
        "source",
        ".",
        "exec",
        "if",
        "for",
        "while",
        "set",
        "sleep",
        "php",
        "python",
        "python3",
        "python2",
        "perl",
        "ruby",
        "node",
        "bash",
        "sh",
        "curl",
        "wget",
        "sudo",
        "nice",
        "ionice",
        "flock",
        "timeout",
        "find",
        "rm",
        "cp",
        "mv",
        "rsync",
        "docker",
        "tar",
        "gzip",
        "mysql",
        "mysqldump",
        "psql",
        "pg_dump",
        "run-parts",
        "env",
        "touch",
        "date",
        "true",
        "false",
        "cat",
        "chmod",
        "chown",
        "git",
        "make",
        "java",
        "systemctl",
        "service",
        "kill",
        "pkill",
        "killall",
        "su",
        "nohup",
        "/usr/bin/env",
    )
)


def _can_be_user(word: str) -> bool:
    """False for a word no system crontab means as its user: a path, an assignment, a shell
    word or a program — unless this host has a user of that name."""
    if not ("/" in word or "=" in word or "$" in word or word in _NOT_USERS):
        return True
    try:
        import pwd

        pwd.getpwnam(word)
    except (KeyError, ImportError):
        return False
    return True


def split_percent(command: str) -> tuple[str, str | None]:
    """Split at the first unescaped ``%``: (command text, stdin as cron feeds it or None)."""
    if "%" not in command:
        return command, None
    escaped = False
    for i, ch in enumerate(command):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
        elif ch == "%":
            return command[:i], translate_stdin(command[i + 1 :])
    return command, None


def translate_stdin(data: str) -> str:
    """cron's stdin translation: ``%`` → newline, ``\\%`` → ``%``, other backslashes kept."""
    out: list[str] = []
    escaped = False
    for ch in data:
        if escaped:
            if ch != "%":
                out.append("\\")
        elif ch == "%":
            ch = "\n"
        escaped = ch == "\\"
        if not escaped:
            out.append(ch)
    return "".join(out)


_ENV = re.compile(r"""[ \t]*(?:"([^"]*)"|'([^']*)'|([^ \t='"][^ \t=]*))[ \t]*=[ \t]*(.*)\Z""", re.S)


def parse_env(text: str) -> tuple[str, str] | None:
    """``NAME=VALUE`` as cron's ``load_env`` accepts it, or None when the line is not one:
    optional blanks around ``=``; name and value each optionally quoted (quotes only strip);
    only blanks may follow a quoted value; an unquoted value loses its trailing blanks."""
    if "=" not in text:
        return None
    match = _ENV.match(text)
    if match is None:
        return None
    name = match.group(1) if match.group(1) is not None else match.group(2)
    if name is None:
        name = match.group(3)
    if not name:
        return None
    value = match.group(4)
    if value[:1] in ("'", '"'):
        close = value.find(value[0], 1)
        if close < 0 or value[close + 1 :].strip(_BLANKS):
            return None
        return name, value[1:close]
    return name, value.rstrip(_BLANKS)


def looks_like_field(token: str) -> bool:
    """True for tokens such as ``*``, ``0``, ``?``, ``1-5``, ``MON-FRI``: not a command name."""
    return bool(_FIELD_LIKE.fullmatch(token))


# -- one line ------------------------------------------------------------------------------


def _parse_line(raw: str, number: int, path: str, system: bool, state: _State) -> CrontabLine:
    text = raw[:-1] if raw.endswith("\n") else raw
    start = len(text) - len(text.lstrip(_BLANKS))
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
                    column=_skip_blanks(raw, 0) + 1,
                    field="timezone",
                )
            )
    elif name in ("CRON_TZ", "TZ"):
        problems.append(_zone_not_schedule(name, value, state.cron, _skip_blanks(raw, 0) + 1))
    if "\r" in value:
        problems.append(_cr_problem())
    problems.extend(_env_problems(name, value, _skip_blanks(raw, 0) + 1))
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


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPANSION_IN_VALUE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_SECOND_ASSIGNMENT = re.compile(r"\s([A-Za-z_][A-Za-z0-9_]*)=")


def _env_problems(name: str, value: str, column: int) -> list[Problem]:
    """What an env line does that its writer did not mean. crontab(5): cron takes everything
    before the ``=`` as the name and the rest of the line as the value, and "the value string
    is not parsed for environmental substitutions or replacement of variables"."""
    problems: list[Problem] = []
    if not _IDENTIFIER.fullmatch(name):
        core = name.strip(";:&|`'\" \t")
        hint = f"; `${core}` in the lines below stays unset" if _IDENTIFIER.fullmatch(core) else ""
        problems.append(
            Problem(
                "env-name",
                f"sets a variable named `{name}`: cron passes it on, but no shell can expand a "
                f"name like that{hint}",
                Severity.WARNING,
                column=column,
                field="env",
            )
        )
    second = _SECOND_ASSIGNMENT.search(value)
    if second and not value.startswith(("'", '"')):
        problems.append(
            Problem(
                "env-one-per-line",
                f"one assignment per line: cron sets {name} to `{value}`, and "
                f"{second.group(1)} is not set at all",
                Severity.WARNING,
                column=column,
                field="env",
            )
        )
    found = _EXPANSION_IN_VALUE.search(value)
    if found and not value.startswith("'"):
        problems.append(
            Problem(
                "env-not-expanded",
                f"cron does not expand `${found.group(1)}` in an env line: {name} is the "
                f"literal text `{value}` (a shell expands it only where a command says "
                f"${name}, and then not again)",
                Severity.WARNING,
                column=column,
                field="env",
            )
        )
    return problems


def _zone_not_schedule(name: str, value: str, cron: Flavour, column: int) -> Problem:
    """TZ (every cron) and CRON_TZ (where the daemon ignores it) reach the commands'
    environment only: the schedules keep running in the daemon's zone."""
    if name == "TZ":
        message = (
            f'TZ="{value}" only sets the commands\' environment: {cron.label} schedules the '
            "jobs below in the daemon's zone, not in this one"
        )
    else:
        message = (
            f'{cron.label} ignores CRON_TZ="{value}" for scheduling (it handles every job '
            "in the daemon's single zone; CRON_TZ is a cronie feature): the jobs below run at "
            "these hours in the daemon's zone"
        )
    return Problem("zone-not-schedule", message, Severity.WARNING, column=column, field="timezone")


def _job_line(
    raw: str, text: str, start: int, number: int, path: str, system: bool, state: _State
) -> CrontabLine:
    body = text[start:]
    if body.strip(_BLANKS) == "\r":
        return _invalid(raw, number, path, _cr_problem(only=True))
    if body.startswith("@"):
        match = _MACRO.match(body)
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
        match = _FIVE.match(body)
        if match is None:
            words = _TOKEN.findall(body)
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
    expr, flavour_problems = _as_flavour_reads(expr, state.cron, columns[0])
    expr = state.schedules.setdefault(expr, expr)
    quartz = _quartz_extra(rest, expr)
    try:
        _schedule(expr, state.timezone)
    except ScheduleError as exc:
        if quartz is not None:
            return _invalid(raw, number, path, _quartz_rejected(quartz, expr, rest_column, exc))
        if match.re is _FIVE:
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
        return _invalid(raw, number, path, _quartz_star(quartz, expr, rest_column, state.cron))
    user: str | None = None
    user_column = rest_column
    if system:
        user_match = _TOKEN.match(rest)
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
        if not _can_be_user(user):
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
        after = _skip_blanks(rest, user_match.end())
        rest_column += after
        rest = rest[after:]
    if not rest.strip(_BLANKS):
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
        return _invalid(raw, number, path, _quartz_user(quartz, expr, user_column, user or ""))
    command, stdin = split_percent(rest)
    problems: tuple[Problem, ...] = flavour_problems
    if quartz is not None:
        problems += (_quartz_runs(quartz, expr, rest_column, command),)
    if text.endswith("\r"):
        problems += (_cr_problem(),)
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


def _quartz_extra(rest: str, expr: str) -> list[str] | None:
    """The extra time fields at the start of the command when the line looks pasted from
    Quartz or a seconds-field scheduler (``0 */5 * * * * php …``, ``0 30 2 * * ? cmd``), or
    None. Cron itself never sees more than five fields: what follows is the command."""
    token = _TOKEN.match(rest)
    if token is None or expr.startswith("@") or not looks_like_field(token.group()):
        return None
    if not looks_like_field(expr.split(" ", 1)[0]):
        return None  # the first field is garbage: report the schedule itself
    extra = [token.group()]
    following = _TOKEN.match(rest, _skip_blanks(rest, token.end()))
    if following is not None and re.fullmatch(r"\*|\?|[0-9]{4}(-[0-9]{4})?", following.group()):
        extra.append(following.group())
    return extra


def _quartz_head(extra: list[str], expr: str) -> str:
    count = 5 + len(extra)
    return (
        f"{count} fields: looks like a Quartz or seconds-field expression pasted from another "
        f'scheduler ("{expr} {" ".join(extra)}"); cron reads only the first 5 as the schedule'
    )


def _quartz_rejected(extra: list[str], expr: str, column: int, exc: ScheduleError) -> Problem:
    return Problem(
        "quartz",
        f"{_quartz_head(extra, expr)}, and rejects this line: {exc.reason}",
        column=column,
    )


def _quartz_star(extra: list[str], expr: str, column: int, cron: Flavour) -> Problem:
    """Vixie-derived crons refuse a command that starts with ``*``: entry.c checks for it to
    "catch a common typo", which is what a pasted seconds field is."""
    return Problem(
        "quartz",
        f"{_quartz_head(extra, expr)}, so the command would start with "
        f'"{extra[0]}": {cron.label} rejects this line ("bad command", its check for exactly '
        "this mistake)",
        column=column,
    )


def _quartz_user(extra: list[str], expr: str, column: int, user: str) -> Problem:
    return Problem(
        "quartz",
        f'{_quartz_head(extra, expr)} and "{user}" as the user name, which no account has: '
        'cron rejects this line ("bad username")',
        column=column,
        field="user",
    )


def _quartz_runs(extra: list[str], expr: str, column: int, command: str) -> Problem:
    """What a user crontab really does with a pasted 6-field line: cron accepts it, runs it on
    the first five fields, and hands the rest, extra field included, to the shell."""
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
        f"{_quartz_head(extra, expr)}: cron accepts it, runs it {_describe(expr)} and "
        f'runs the command "{command.strip()}": {what}; the intended command never runs',
        Severity.ERROR,
        column=column,
    )


def _describe(expr: str) -> str:
    try:
        return _schedule(expr, None).describe()
    except ScheduleError:  # pragma: no cover - only called after the schedule parsed
        return expr


def _as_flavour_reads(expr: str, cron: Flavour, column: int) -> tuple[str, tuple[Problem, ...]]:
    """The five fields as this cron reads them, and what it changed: cronie picks one value
    for each ``a~b`` when it loads the file (shown here as the range's start); busybox reads
    ``N/S`` as ``N``, the step ignored. Other crons reject both, as the field parser does."""
    if expr.startswith("@") or ("~" not in expr and "/" not in expr):
        return expr, ()  # the common case, checked first: 100,000 lines go through here
    problems: list[Problem] = []
    both = cron.random_ranges == "both"
    if cron.random_ranges != "none" and (parts := random_parts(expr, both)):
        expr = without_random(expr, tuple(spec.low for spec in SPECS), both)
        if both:
            message = (
                f"{cron.label} accepts {', '.join(parts)} (its crontab -n passes it) but does "
                "not document what it means (cronie picks a random value in the range): next "
                "runs are shown for the range's start; write the value you mean"
            )
        else:
            message = (
                f"{cron.label} picks one random value in {', '.join(parts)} each time it loads "
                "the file (next runs are shown for the range's start): the time is not fixed"
            )
        problems.append(
            Problem(
                "random-range",
                message,
                Severity.WARNING if both else Severity.INFO,
                column=column,
            )
        )
    if cron.single_value_step and (parts := single_steps(expr)):
        expr = without_single_steps(expr)
        problems.append(
            Problem(
                "step-ignored",
                f"busybox crond reads {', '.join(parts)} as the single value before the slash: "
                "the step is ignored, so it runs once where a repeat was meant",
                Severity.ERROR,
                column=column,
            )
        )
    return expr, tuple(problems)


def _invalid(raw: str, number: int, path: str, problem: Problem) -> CrontabLine:
    return CrontabLine(path, number, raw, Kind.INVALID, problems=(problem,))


def _cr_problem(only: bool = False) -> Problem:
    if only:
        return Problem(
            "carriage-return",
            "a carriage return alone (Windows line endings): cron rejects this line; "
            "convert the file with dos2unix",
        )
    return Problem(
        "carriage-return",
        "the line ends with a carriage return (Windows line endings): cron passes it to the "
        "shell as part of the command; convert the file with dos2unix",
        Severity.WARNING,
    )


def _continued(line: CrontabLine) -> CrontabLine:
    """A job whose command ends in an unescaped backslash: cron has no line continuation, so
    the next line is read on its own and the shell gets a stray backslash."""
    if line.kind is not Kind.JOB or not line.command:
        return line
    text = line.command.rstrip(" \t\r\n")
    trailing = len(text) - len(text.rstrip("\\"))
    if trailing % 2 == 0:
        return line
    return _with_problem(
        line,
        Problem(
            "continuation",
            "the command ends with a backslash, but cron has no line continuation: the "
            "shell gets a stray `\\` and the next line is read as a line of its own, so "
            "the command never ran as written",
            Severity.ERROR,
        ),
    )


def _with_problem(line: CrontabLine, problem: Problem) -> CrontabLine:
    return replace(line, problems=(*line.problems, problem))


def _skip_blanks(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _BLANKS:
        i += 1
    return i


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


# -- user or system format -----------------------------------------------------------------


def _job_words(raws: list[str]) -> Iterator[tuple[str, str | None]]:
    """For each job line: the word after the schedule and the word after that."""
    for raw in raws:
        sixth, seventh = _sixth_token(raw)
        if sixth is not None:
            yield sixth, seventh


def _sixth_token(raw: str) -> tuple[str | None, str | None]:
    """The word after the schedule and the word after that (None when missing)."""
    text = raw.rstrip("\n")
    body = text.lstrip(_BLANKS)
    if not body or body[0] == "#" or parse_env(text) is not None:
        return None, None
    if body.startswith("@"):
        match = _MACRO.match(body)
        rest = (match.group(2) or "") if match else ""
    else:
        match = _FIVE.match(body)
        if match is None:
            return None, None
        rest = match.group(6) or ""
    tokens = _TOKEN.findall(rest, 0)[:2]
    if not tokens:
        return None, None
    return tokens[0], tokens[1] if len(tokens) > 1 else None


__all__ = [
    "FORMATS",
    "MACROS",
    "SPECS",
    "format_from_path",
    "looks_like_field",
    "parse_crontab",
    "parse_env",
    "read_crontab",
    "split_percent",
    "translate_stdin",
]
