"""cron's ``%`` in a command: the first unescaped one ends the command, the rest is its stdin.

Exactly as ``do_command.c`` does it: in the stdin ``%`` becomes a newline and ``\\%`` a ``%``.
"""

from __future__ import annotations


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
