"""Where each command's stdout and stderr end up, read from the shell tree.

Cron captures a job's stdout and stderr and mails them (to ``MAILTO``, else the crontab's owner;
``MAILTO=""`` discards them: crontab(5)). The shell then applies each command's redirections
left to right, those of enclosing groups first (``2>&1 >file`` points stderr at what stdout
was — cron's capture — before stdout moves to the file). A command before a pipe writes its
stdout into the pipe.
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate_cron.analysis.tree import Call, Redirect, Script
from migrate_cron.analysis.work_calls import PREPARATION, unwrapped_top
from migrate_cron.analysis.wrappers import INTERPRETERS, basename

CRON = "cron"  # captured by cron: mailed, or dropped with MAILTO=""
NULL = "null"
PIPE = "pipe"
CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Fate:
    """Where one command's output and errors go: ``cron``, ``null``, ``pipe``, ``closed`` or
    ``file:PATH``; ``redirects`` the redirections that decided it, as written."""

    call: Call
    program: str
    stdout: str
    stderr: str
    redirects: tuple[str, ...]


def _target(word: str, table: dict[int, str]) -> str:
    if word == "/dev/null":
        return NULL
    if word in ("/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"):
        return table.get(1, CLOSED)
    if word in ("/dev/stderr", "/proc/self/fd/2", "/dev/fd/2"):
        return table.get(2, CLOSED)
    return f"file:{word}"


def fate(call: Call) -> tuple[str, str]:
    """(stdout, stderr) of ``call`` after its redirections."""
    table = {1: CRON, 2: CRON}
    for redirect in call.chain:
        _apply(redirect, table)
    return table[1], table[2]


def _apply(redirect: Redirect, table: dict[int, str]) -> None:
    op = redirect.op
    if op == "|":
        table[1] = PIPE
    elif op == "|&":
        table[1] = table[2] = PIPE
    elif op in (">&-", "<&-") or (op in (">&", "<&") and redirect.target == "-"):
        table[redirect.fd if redirect.fd is not None else (1 if op[0] == ">" else 0)] = CLOSED
    elif op in (">", ">>", ">|"):
        table[redirect.fd if redirect.fd is not None else 1] = _target(redirect.target, table)
    elif op in ("&>", "&>>"):
        table[1] = table[2] = _target(redirect.target, table)
    elif op == ">&":
        fd = redirect.fd if redirect.fd is not None else 1
        if redirect.target.isdigit():
            table[fd] = table.get(int(redirect.target), CLOSED)
        elif redirect.target == "-":
            table[fd] = CLOSED
        elif redirect.fd is None:  # bash's `>&file`: both streams
            table[1] = table[2] = _target(redirect.target, table)


def shown_program(argv: tuple[str, ...]) -> str:
    """How a finding names a command: the script an interpreter runs (``php x/y.php`` is
    ``y.php``), else the program."""
    if not argv:
        return ""
    if basename(argv[0]) in INTERPRETERS:
        script = next((a for a in argv[1:] if not a.startswith("-")), None)
        if script is not None:
            return basename(script)
    return basename(argv[0])


def fates(script: Script) -> list[Fate]:
    """The fate of each command that does the work (not ``cd``/``sleep``/``source``, not in
    ``$(…)``), in order."""
    if "fates" in script.memo:
        return list(script.memo["fates"])
    out: list[Fate] = []
    for call, inner in unwrapped_top(script):
        program = basename(inner.argv[0]) if inner.argv else basename(call.words[0].value)
        if program in PREPARATION:
            continue
        program = shown_program(inner.argv) or program
        stdout, stderr = fate(call)
        shown = tuple(r.raw for r in call.chain if r.is_output and r.op not in ("|", "|&"))
        out.append(Fate(call, program, stdout, stderr, shown))
    script.memo["fates"] = tuple(out)
    return out
