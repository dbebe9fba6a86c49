"""Error-swallowing tails a crontab line needed under cron, and that keep hiding failures from
the queue after a switch: ``|| true``, ``; exit 0``, and output sent to ``/dev/null``.

Under the queue a non-zero exit is what triggers retries, and the output is kept with each
failed attempt, so ``migrate --strip-swallow`` removes them from the registry's command (the
crontab line itself stays byte for byte for rollback). Only what lies outside quotes is
touched."""

from __future__ import annotations

import re

#: ``|| true`` / ``|| :`` / ``|| exit 0`` / ``; true`` / ``; exit 0`` at the very end.
_TAIL = re.compile(r"\s*(?:\|\||;)\s*(?:true|:|exit\s+0)\s*;?\s*\Z")
#: ``>/dev/null``, ``2>/dev/null``, ``&>/dev/null``, ``>>/dev/null``, ``2>&1``.
_REDIRECT = re.compile(r"\s*(?:[0-9&]?>>?\s*/dev/null|2>&1)(?=\s|;|\||&|\Z)")


def swallowers(command: str) -> list[str]:
    """What in ``command`` hides a failure or its output, as written."""
    found = []
    tail = _TAIL.search(command)
    if tail and _outside_quotes(command, tail.start()):
        found.append(tail.group(0).strip())
    found += [
        m.group(0).strip()
        for m in _REDIRECT.finditer(command)
        if _outside_quotes(command, m.start()) and "dev/null" in m.group(0)
    ]
    return found


def strip_swallow(command: str) -> str:
    """``command`` without its swallowing tail and its ``/dev/null`` redirections (and the
    ``2>&1`` that went with them)."""
    previous = None
    while previous != command:
        previous = command
        tail = _TAIL.search(command)
        if tail and _outside_quotes(command, tail.start()):
            command = command[: tail.start()]
    if not any("dev/null" in s for s in swallowers(command)):
        return command.strip()
    out, last = [], 0
    for m in _REDIRECT.finditer(command):
        if _outside_quotes(command, m.start()):
            out.append(command[last : m.start()])
            last = m.end()
    out.append(command[last:])
    return "".join(out).strip()


def _outside_quotes(text: str, index: int) -> bool:
    single = double = False
    escaped = False
    for ch in text[:index]:
        if escaped:
            escaped = False
        elif ch == "\\" and not single:
            escaped = True
        elif ch == "'" and not double:
            single = not single
        elif ch == '"' and not single:
            double = not double
    return not (single or double)
