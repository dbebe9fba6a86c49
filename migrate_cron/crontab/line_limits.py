"""What a job line must be for migrate-cron to take it over: text the registry can hold, and a
command ``sh -c`` can be given.

- The registry is TOML, which is UTF-8 text: a line (or an env line above it) holding bytes
  that are not UTF-8 runs under cron, but cannot be kept byte for byte — nor given back by
  ``rollback``. The parser keeps such bytes (decoded with ``surrogateescape``).
- A NUL byte cannot be given to a process at all (its arguments and environment are C
  strings), and cron reads one as the end of what it is reading: an entry holding it would
  fail every attempt in a few ms. The parser keeps it, so ``analyze`` can name it.
- Cron, and the worker after it, runs a line as ``SHELL -c COMMAND``, the whole command one
  argument of one ``execve``. Linux passes one argument of at most 32 pages (MAX_ARG_STRLEN,
  131,072 bytes with its NUL); a longer one fails with E2BIG ("Argument list too long")
  before the shell starts, so such a line never ran as written, and an entry holding it
  would fail every attempt.

The parser puts these on the line as problems (``analyze`` reports them), ``generate
registry`` refuses such lines with the same words (``--force`` cannot take them), and the
registry refuses to load a command that is too long.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from migrate_cron.crontab.entry import CrontabLine, Problem, Severity

#: The longest command ``sh -c`` can be given, in bytes (the argument's NUL not counted).
MAX_COMMAND_BYTES = 131_072 - 1

#: A command of at most this many characters fits whatever they are (4 bytes each at most).
_SURELY_SHORT = MAX_COMMAND_BYTES // 4

#: The problem codes of a job line migrate-cron cannot take over (``generate`` refuses it).
NOT_UTF8 = "not-utf8"
ENV_NOT_UTF8 = "env-not-utf8"
COMMAND_TOO_LONG = "command-too-long"
NUL_BYTE = "nul-byte"
ENV_NUL_BYTE = "env-nul-byte"
UNKEEPABLE = frozenset({NOT_UTF8, ENV_NOT_UTF8, COMMAND_TOO_LONG, NUL_BYTE, ENV_NUL_BYTE})

#: Why a NUL byte keeps a line out of the registry (the registry refuses one too).
_NUL_WHY = (
    "no process can be given one (its arguments and environment are C strings) and cron reads "
    "it as the end of the line"
)


@dataclass(frozen=True)
class BadEnv:
    """The first env line in effect above a job line that the registry cannot keep."""

    name: str
    line: int
    code: str  # ENV_NOT_UTF8 or ENV_NUL_BYTE


def command_too_long(command: str) -> str | None:
    """Why ``command`` cannot be run as ``sh -c COMMAND``, or None."""
    size = len(command.encode("utf-8", "surrogateescape"))
    if size <= MAX_COMMAND_BYTES:
        return None
    return (
        f"the command is {size:,} bytes; Linux runs at most {MAX_COMMAND_BYTES:,} bytes as one "
        "argument of `sh -c` (MAX_ARG_STRLEN): put it in a script and run the script"
    )


def first_undecodable(text: str) -> int | None:
    """The index of the first byte of ``text`` that is not UTF-8 (kept by the parser as a
    lone surrogate), or None."""
    if text.isascii():
        return None
    return next((i for i, ch in enumerate(text) if "\udc80" <= ch <= "\udcff"), None)


def job_line_problems(line: CrontabLine, bad_env: BadEnv | None) -> tuple[Problem, ...]:
    """The problems of a job line that keep it out of the registry; ``bad_env`` is the first
    env line in effect above it that the registry cannot keep."""
    if (
        bad_env is None
        and line.raw.isascii()
        and "\0" not in line.raw
        and len(line.command or "") <= _SURELY_SHORT
    ):
        return ()  # nearly every line: no need to look closer
    problems: list[Problem] = []
    text = line.text
    at = first_undecodable(text)
    nul = text.find("\0")
    if nul >= 0:
        problems.append(
            Problem(
                NUL_BYTE,
                f"a NUL byte (column {nul + 1}): {_NUL_WHY}, so `generate registry` does not "
                "register this line",
                Severity.WARNING,
                column=nul + 1,
            )
        )
    elif at is not None:
        problems.append(
            Problem(
                NOT_UTF8,
                f"{_byte(text, at)} is not UTF-8: cron runs the line's bytes as they are, but "
                "the registry is UTF-8 text and cannot keep them byte for byte, so `generate "
                "registry` does not register this line",
                Severity.WARNING,
                column=at + 1,
            )
        )
    elif bad_env is not None:
        name, number = bad_env.name, bad_env.line
        why = (
            f"holds a NUL byte: {_NUL_WHY}"
            if bad_env.code == ENV_NUL_BYTE
            else "is not UTF-8: the registry cannot keep this job's environment byte for byte"
        )
        problems.append(
            Problem(
                bad_env.code,
                f"the env line {name}= above it (line {number}) {why}, so `generate "
                "registry` does not register this line",
                Severity.WARNING,
                field="env",
            )
        )
    too_long = command_too_long(line.shell_command or "")
    if too_long is not None:
        problems.append(Problem(COMMAND_TOO_LONG, too_long, Severity.ERROR, field="command"))
    return tuple(problems)


def env_line_problem(text: str, name: str) -> Problem | None:
    """An env line that is not UTF-8 (``text`` without its line ending, setting ``name``):
    the jobs below it cannot be registered. CRON_TZ is not kept as env (a zone that is not
    text is no zone: the parser says so)."""
    if name == "CRON_TZ":
        return None
    nul = text.find("\0")
    if nul >= 0:
        return Problem(
            NUL_BYTE,
            f"a NUL byte (column {nul + 1}): {_NUL_WHY}, so `generate registry` does not "
            "register the jobs below it",
            Severity.WARNING,
            column=nul + 1,
        )
    at = first_undecodable(text)
    if at is None:
        return None
    return Problem(
        NOT_UTF8,
        f"{_byte(text, at)} is not UTF-8: the registry cannot keep this value byte for byte, "
        "so `generate registry` does not register the jobs below it",
        Severity.WARNING,
        column=at + 1,
    )


def undecodable_env(env: Mapping[str, str], numbers: Mapping[str, int]) -> BadEnv | None:
    """The first assignment of ``env`` (but CRON_TZ, which is not kept as env) that holds a
    NUL byte or is not UTF-8, with the number of the line that set it; None when all are
    text the registry can keep."""
    for name, value in env.items():
        if name == "CRON_TZ":
            continue
        if "\0" in name or "\0" in value:
            return BadEnv(name, numbers.get(name, 0), ENV_NUL_BYTE)
        if first_undecodable(name + value) is not None:
            return BadEnv(name, numbers.get(name, 0), ENV_NOT_UTF8)
    return None


def _byte(text: str, at: int) -> str:
    return f"byte 0x{ord(text[at]) - 0xDC00:02X} (column {at + 1})"
