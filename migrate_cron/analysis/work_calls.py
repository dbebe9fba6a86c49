"""Which calls of a line are its work: wrappers stepped over, ``-c`` bodies opened, and the
calls that only prepare (``cd``, ``sleep``, ``source``) or report (``echo``, ``date``) left out.
The rules and the naming ask this of every line, so the answers are memoised on the script.
"""

from __future__ import annotations

from migrate_cron.analysis.tree import Call, Script
from migrate_cron.analysis.wrappers import Unwrapped, basename, unwrap

#: Calls that prepare or pace a job but are not its work.
PREPARATION = frozenset(
    (
        "cd",
        "sleep",
        "test",
        "[",
        "[[",
        "true",
        ":",
        "export",
        "source",
        ".",
        "umask",
        "set",
        "ulimit",
        "wait",
        "unset",
        "local",
        "declare",
        "readonly",
        "typeset",
        "shopt",
        "alias",
        "pushd",
        "popd",
        "hash",
        "trap",
        "renice",
        "exit",
        "return",
        "false",
    )
)


#: Calls that only report progress (a timestamp, a line to a log): named only when nothing else.
REPORTING = frozenset(("echo", "printf", "date", "logger", "cat", "tee", "wall"))


def work_calls(script: Script, depth: int = 0) -> list[tuple[Call, Unwrapped]]:
    """The calls that do the job's work, wrappers stepped over and ``-c`` bodies opened, in
    order: preparation (``cd``, ``sleep``, ``source``…) and the consumers of a pipe left out."""
    key = f"work{depth}"
    if key in script.memo:
        return list(script.memo[key])
    found = _work_calls(script, depth)
    script.memo[key] = tuple(found)
    return found


def unwrapped_top(script: Script) -> tuple[tuple[Call, Unwrapped], ...]:
    """Every top-level call with words, unwrapped (memoised on the script)."""
    if "top" not in script.memo:
        script.memo["top"] = tuple((c, unwrap(c)) for c in script.top if c.words)
    result: tuple[tuple[Call, Unwrapped], ...] = script.memo["top"]
    return result


def _work_calls(script: Script, depth: int) -> list[tuple[Call, Unwrapped]]:
    found: list[tuple[Call, Unwrapped]] = []
    for call, inner in (
        unwrapped_top(script)
        if depth == 0
        else tuple((c, unwrap(c, depth)) for c in script.top if c.words)
    ):
        if inner.body is not None:
            found.extend(work_calls(inner.body, depth + 1))
            continue
        if not inner.argv or basename(inner.argv[0]) in PREPARATION:
            continue
        if call.joined == "|":
            continue
        found.append((call, inner))
    return found


def main_call(script: Script) -> tuple[Call, Unwrapped] | None:
    """The call a job is named after: the first that does work, else the first report."""
    if "main" in script.memo:
        found: tuple[Call, Unwrapped] | None = script.memo["main"]
        return found
    script.memo["main"] = _main_call(script)
    return script.memo["main"]  # type: ignore[no-any-return]


def _main_call(script: Script) -> tuple[Call, Unwrapped] | None:
    calls = work_calls(script)
    for call, inner in calls:
        if basename(inner.argv[0]) not in REPORTING:
            return call, inner
    # `echo text | mail …`: the producer only reports, the consumer is the work.
    for call, inner in unwrapped_top(script):
        if call.joined == "|" and inner.argv and basename(inner.argv[0]) not in REPORTING:
            return call, inner
    return calls[0] if calls else None
