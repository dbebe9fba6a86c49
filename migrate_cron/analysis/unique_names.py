"""One name per line of a file, unique within it: lines that would share a name are told apart
by what differs between them (an argument, an option's value, a directory of the script), then
by their schedule, and a true copy of a line says so — never by a bare counter, which would
not survive a reordering of the file.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from migrate_cron.analysis.job import cadence_of
from migrate_cron.analysis.naming import MAX_LENGTH, Naming, slug
from migrate_cron.analysis.naming_words import GENERIC_SCRIPTS, TOOLS
from migrate_cron.analysis.wrappers import INTERPRETERS
from migrate_cron.crontab.schedule import Schedule


def schedule_word(expr: str) -> str:
    """``hourly``, ``daily``, ``every-5min``, ``weekly``, ``monthly``, ``at-boot``… for telling
    two lines of one command apart by when they run."""
    macro = {
        "@reboot": "at-boot",
        "@yearly": "yearly",
        "@annually": "yearly",
        "@monthly": "monthly",
        "@weekly": "weekly",
        "@daily": "daily",
        "@midnight": "daily",
        "@hourly": "hourly",
    }
    if expr in macro:
        return macro[expr]
    try:
        fields = Schedule.parse(expr).fields
    except ValueError:
        return "custom"
    gap = cadence_of(expr).typical_gap
    if gap is not None and gap < 60:
        return f"every-{gap:g}min"
    if gap is not None and gap < 1440:
        return "hourly" if gap == 60 else f"every-{gap / 60:g}h"
    if len(fields.months) < 12 and len(fields.months) <= 1:
        return "yearly"
    if not fields.day_star and len(fields.days) == 1:
        return "monthly"
    if not fields.weekday_star and len(fields.weekdays) == 1:
        return "weekly"
    return "daily"


def _clock(expr: str) -> str:
    try:
        fields = Schedule.parse(expr).fields
    except ValueError:
        return ""
    if len(fields.hours) == 1 and len(fields.minutes) == 1:
        return f"{fields.hours[0]:02d}{fields.minutes[0]:02d}"
    return ""


def name_lines(items: Sequence[tuple[Naming | None, str]]) -> list[str]:
    """One name per line (``items``: its naming and schedule), unique within the sequence,
    told apart by tokens, then schedule, never by a counter."""
    bases = [
        (_telling(n.base, expr) if n is not None and n.base else f"{schedule_word(expr)}-job", expr)
        for n, expr in items
    ]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, (base, _) in enumerate(bases):
        groups[base].append(i)
    names = [base for base, _ in bases]
    for base, members in groups.items():
        if len(members) < 2:
            continue
        token_lists = [_tokens_of(items[i][0]) for i in members]
        shared = set.intersection(*(set(t) for t in token_lists))
        tellings = [[t for t in dict.fromkeys(tokens) if t not in shared] for tokens in token_lists]
        _tell_apart(base, members, tellings, names)
    _by_schedule(names, [expr for _, expr in bases])
    return names


#: Bases that name a program, not a job: said with when they run (``echo-hourly``).
_BARE = TOOLS | INTERPRETERS | GENERIC_SCRIPTS | frozenset(("job", "cmd", "c", "x", "a"))


def _telling(base: str, expr: str) -> str:
    return f"{base}-{schedule_word(expr)}" if base in _BARE else base


def _tokens_of(found: Naming | None) -> tuple[str, ...]:
    return found.tokens if found is not None else ()


def _tell_apart(base: str, members: list[int], tellings: list[list[str]], names: list[str]) -> None:
    """Each member named ``base`` plus the fewest of its telling tokens (in the order
    written) that no other member starts with: linear in the group per round."""
    pending = list(range(len(members)))
    width = 1
    while pending and width <= 6:
        counts = Counter(tuple(t[:width]) for t in tellings)
        still = []
        for i in pending:
            key = tuple(tellings[i][:width])
            if counts[key] == 1 or len(tellings[i]) <= width:
                if key:
                    names[members[i]] = _join(base, key)
            else:
                still.append(i)
        pending = still
        width += 1
    for i in pending:
        names[members[i]] = _join(base, tellings[i][:6])


_ORDINALS = ("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def _copy_word(n: int) -> str:
    """``copy``, ``third-copy``…: the n-th copy of one line, in words (a number at the end
    of a name reads as a counter)."""
    if n == 2:
        return "copy"
    if n - 2 < len(_ORDINALS):
        return f"{_ORDINALS[n - 2]}-copy"
    letters = ""
    k = n
    while k:
        k, r = divmod(k, 26)
        letters = chr(ord("a") + r) + letters
    return f"copy-{letters}"


def _join(base: str, parts: Sequence[str]) -> str:
    name = "-".join([base, *parts])
    if len(name) > MAX_LENGTH:
        name = name[:MAX_LENGTH].rstrip("-")
    return slug(name)


def _by_schedule(names: list[str], exprs: list[str]) -> None:
    """Names still shared: the schedule's word, then its time of day; a line that is the same
    as another in every way (a copy) is ``-again``."""
    for attempt in (schedule_word, _clock):
        groups: dict[str, list[int]] = defaultdict(list)
        for i, name in enumerate(names):
            groups[name].append(i)
        for members in groups.values():
            if len(members) < 2:
                continue
            words = [attempt(exprs[i]) for i in members]
            if len(set(words)) == 1:
                continue  # the same everywhere: it tells nothing
            for i, word in zip(members, words, strict=True):
                if word:
                    names[i] = _join(names[i], [word])
    seen: Counter[str] = Counter()
    for i, name in enumerate(names):
        seen[name] += 1
        if seen[name] > 1:
            # The same command at the same time: a copy of a line; said so, and numbered
            # because nothing else tells copies apart.
            copy = _copy_word(seen[name])
            names[i] = f"{name[: MAX_LENGTH - len(copy) - 1]}-{copy}"
