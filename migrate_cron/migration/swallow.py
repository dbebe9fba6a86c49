"""Error-swallowing a crontab line needed under cron, and that keeps hiding failures from the
queue after a switch: a tail that forces success (``|| true``, ``; exit 0``) and output sent
to ``/dev/null``.

Under the queue a non-zero exit is what triggers retries and the failed shelf, and the output
is kept with each failed attempt. ``migrate`` therefore removes the tail from the registry's
command by default (``--keep-swallow`` keeps it), and ``--strip-swallow`` removes the
``/dev/null`` redirections too; the crontab line itself stays byte for byte for rollback.

Both are read from the shell tree (``analysis.tree``), the same reading ``analyze`` gives its
``errors-swallowed`` finding, and cut out by the byte spans the tree gives; an edit is kept
only when the shortened command parses to the same commands less what was removed, so quoted
text or an unusual layout is never cut wrongly — it is left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate_cron.analysis.output_rules import swallowing_tail
from migrate_cron.analysis.tree import Call, Redirect, Script, parse

_ENCODING = ("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Swallow:
    """What in a command hides a failure or its output, as written: the success-forcing
    ``tail`` (``"|| true"``) and the redirections to ``/dev/null`` (``"> /dev/null"``)."""

    tail: str | None
    nulls: tuple[str, ...]

    @property
    def found(self) -> list[str]:
        return ([self.tail] if self.tail else []) + list(self.nulls)


def swallowers(command: str) -> list[str]:
    """What in ``command`` hides a failure or its output, as written."""
    return find(command).found


def find(command: str) -> Swallow:
    script = parse(command)
    if script.broken:
        return Swallow(None, ())
    tail = swallowing_tail(script)
    shown = f"{tail.joined} {tail.text}" if tail is not None else None
    return Swallow(shown, tuple(r.raw for r in _null_redirects(script)))


def strip_tail(command: str) -> str | None:
    """``command`` without its success-forcing tail, or None (none there, or no safe cut)."""
    script = parse(command)
    tail = swallowing_tail(script) if not script.broken else None
    if tail is None:
        return None
    data = command.encode(*_ENCODING)
    start, end = tail.span
    rest = data[end:].strip()
    if rest not in (b"", b";") or tail.span == (0, 0):
        return None  # something follows the tail (a comment, a second line): leave it
    head = data[:start].rstrip()
    if not head.endswith(tail.joined.encode()):
        return None
    stripped = head[: -len(tail.joined)].rstrip().decode(*_ENCODING)
    return stripped if _same_less(script, parse(stripped), drop_tail=True) else None


def strip_swallow(command: str) -> str:
    """``command`` without its success-forcing tail and its ``/dev/null`` redirections (and
    the ``2>&1`` that sent errors there too); unchanged where no safe cut exists."""
    command = strip_tail(command) or command
    script = parse(command)
    if script.broken:
        return command
    cuts = {r.span for r in _null_redirects(script)}
    if not cuts:
        return command.strip()
    for call in script.top:
        if any(r.span in cuts for r in call.chain):
            cuts |= {r.span for r in call.chain if r.op == ">&" and r.target == "1"}
    data = command.encode(*_ENCODING)
    out, last = [], 0
    for start, end in sorted(cuts):
        if start < last or (start, end) == (0, 0):
            return command.strip()  # overlapping or unknown spans: no safe cut
        out.append(data[last:start].rstrip(b" \t"))
        last = end
    out.append(data[last:])
    stripped = b"".join(out).strip().decode(*_ENCODING)
    return stripped if _same_less(script, parse(stripped), drop_tail=False) else command.strip()


def _null_redirects(script: Script) -> list[Redirect]:
    """Output redirections to /dev/null written in the line, each once (a group's reaches
    every command inside it)."""
    seen: dict[tuple[int, int], Redirect] = {}
    for call in script.top:
        for r in call.chain:
            if r.is_output and r.target == "/dev/null" and r.span not in seen:
                seen[r.span] = r
    return list(seen.values())


def _same_less(before: Script, after: Script, *, drop_tail: bool) -> bool:
    """``after`` runs the commands ``before`` did, with the same operators between them,
    less the tail when ``drop_tail``."""
    if after.broken:
        return False
    old = [c for c in before.top if c.words or c.assignments]
    if drop_tail:
        old = old[:-1]
    new = [c for c in after.top if c.words or c.assignments]
    return [_shape(c) for c in old] == [_shape(c) for c in new]


def _shape(call: Call) -> tuple[object, ...]:
    return (call.argv, call.joined, call.piped, call.background)
