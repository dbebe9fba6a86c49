"""The two ways a crontab line is switched, as pure functions on one line of text.

- ``enqueue``: the schedule (and the user field of a system crontab) stay exactly as written;
  only the command is replaced by ``migrate-cron enqueue NAME …``. Cron keeps deciding *when*;
  workers now run the command, with retries. The original ``%``-stdin moved to the registry.
- ``scheduler``: the line is commented out behind a marker naming the job, so a reader of the
  crontab sees where it went; the scheduler service now owns the schedule.

Either way the line count never changes, so other jobs' line numbers stay valid, and rollback
puts the registry's ``source.text`` back in place of exactly one line.

The new command is built from an argument list with ``shlex.quote``, then every ``%`` is written
as ``\\%``: cron ends the command at the first unescaped ``%`` (the rest becomes stdin) and turns
``\\%`` back into ``%`` before the shell sees it — inside quotes too. A newline cannot be written
into a crontab line at all, so arguments containing one are refused.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

SCHEDULER_MARKER = "#[migrate-cron scheduler {name}] "
_MARKER_RE = re.compile(r"^#\[migrate-cron scheduler (?P<name>[^\]\s]+)\] ")
_BLANKS = " \t"


def crontab_command(argv: Sequence[str]) -> str:
    """The command text for a crontab line that makes ``/bin/sh`` run exactly ``argv``."""
    for arg in argv:
        if "\n" in arg or "\r" in arg or "\0" in arg:
            raise ValueError(f"cannot write {arg!r} into a crontab line (line break or NUL)")
    return " ".join(shlex.quote(a) for a in argv).replace("%", "\\%")


def command_start(line: str, has_user_field: bool) -> int:
    """Offset of the command in a job line: after the five time fields (or the @macro), the
    user field of a system crontab, and the blanks after them — the way cron splits it."""
    i = _skip(line, 0, _BLANKS)
    fields = 1 if line[i:].startswith("@") else 5
    if has_user_field:
        fields += 1
    for _ in range(fields):
        i = _skip(line, i, _BLANKS)
        j = _skip_to(line, i, _BLANKS)
        if j == i:
            raise ValueError(f"not a crontab job line: {line!r}")
        i = j
    i = _skip(line, i, _BLANKS)
    if i >= len(line):
        raise ValueError(f"crontab job line without a command: {line!r}")
    return i


def enqueue_line(line: str, has_user_field: bool, argv: Sequence[str]) -> str:
    """``line`` with its command (and ``%``-stdin) replaced by ``argv``, schedule untouched."""
    return line[: command_start(line, has_user_field)] + crontab_command(argv)


def scheduler_line(line: str, name: str) -> str:
    """``line`` commented out behind a marker naming the job that now owns it."""
    return SCHEDULER_MARKER.format(name=name) + line


def marked_name(line: str) -> str | None:
    """The job name in a scheduler marker line, or None if ``line`` is not one."""
    m = _MARKER_RE.match(line)
    return m.group("name") if m else None


def _skip(line: str, i: int, chars: str) -> int:
    while i < len(line) and line[i] in chars:
        i += 1
    return i


def _skip_to(line: str, i: int, chars: str) -> int:
    while i < len(line) and line[i] not in chars:
        i += 1
    return i
