"""How a line ends, where cron and the shell part ways with what was meant: a carriage return
from Windows line endings, and a trailing backslash that reads like a continuation cron does not
have."""

from __future__ import annotations

from dataclasses import replace

from migrate_cron.crontab.entry import CrontabLine, Kind, Problem, Severity


def cr_problem(only: bool = False) -> Problem:
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


def continued(line: CrontabLine) -> CrontabLine:
    """A job whose command ends in an unescaped backslash: cron has no line continuation, so
    the next line is read on its own and the shell gets a stray backslash."""
    if line.kind is not Kind.JOB or not line.command:
        return line
    text = line.command.rstrip(" \t\r\n")
    trailing = len(text) - len(text.rstrip("\\"))
    if trailing % 2 == 0:
        return line
    return with_problem(
        line,
        Problem(
            "continuation",
            "the command ends with a backslash, but cron has no line continuation: the "
            "shell gets a stray `\\` and the next line is read as a line of its own, so "
            "the command never ran as written",
            Severity.ERROR,
        ),
    )


def with_problem(line: CrontabLine, problem: Problem) -> CrontabLine:
    return replace(line, problems=(*line.problems, problem))
