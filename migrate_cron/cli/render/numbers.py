"""Numbers as a person reads them: a count agrees with its noun ("1 job", "2 jobs") and a list
of line numbers is folded into runs ("lines 3, 5, 9-12").

Every count that ``analyze``, ``plan`` and ``generate`` print goes through :func:`counted` (or
:func:`plural` for a verb that agrees with it), so "1 job(s)" is spelt nowhere.
"""

from __future__ import annotations

from collections.abc import Iterable


def plural(n: int, singular: str, many: str | None = None) -> str:
    """The word for ``n`` of a thing: ``singular`` for exactly one, else ``many`` (default:
    ``singular`` + "s"). Also for verbs: ``plural(n, "is", "are")``."""
    if n == 1:
        return singular
    return many if many is not None else singular + "s"


def counted(n: int, singular: str, many: str | None = None) -> str:
    """``n`` and its noun: "1 job", "0 jobs", "1,234 jobs"."""
    return f"{n:,} {plural(n, singular, many)}"


def runs(numbers: Iterable[int], limit: int = 40) -> str:
    """Sorted, distinct numbers with consecutive ones folded: "3, 5, 9-12". Past ``limit``
    runs the rest is counted ("…, 90-99 and 1,204 more"), so a huge file stays one line."""
    ordered = sorted(set(numbers))
    spans: list[list[int]] = []
    rest = 0
    for i, number in enumerate(ordered):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        elif len(spans) == limit:
            rest = len(ordered) - i  # a huge list: counted, not walked
            break
        else:
            spans.append([number, number])
    # Two neighbours read better listed ("2, 3") than as a run ("2-3").
    text = ", ".join(
        str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}-{b}" for a, b in spans
    )
    return f"{text} and {rest:,} more" if rest else text


def numbered(noun: str, numbers: Iterable[int], many: str | None = None) -> str:
    """The noun agreeing with how many numbers follow it: "line 3", "lines 3, 5, 9-12"."""
    distinct = set(numbers)
    return f"{plural(len(distinct), noun, many)} {runs(distinct)}"
