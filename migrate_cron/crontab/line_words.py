"""How cron cuts a job line into words: five fields (or an @macro), then the rest of the line.

Fields are separated by blanks (spaces and tabs) only, exactly as cron's ``get_string`` reads
them; the parser and the user-or-system vote both read a line through these patterns, so they
never disagree about where the schedule ends.
"""

from __future__ import annotations

import re

BLANKS = " \t"
FIVE = re.compile(
    r"([^ \t]+)[ \t]+([^ \t]+)[ \t]+([^ \t]+)[ \t]+([^ \t]+)[ \t]+([^ \t]+)(?:[ \t]+(.*))?\Z",
    re.S,
)
MACRO = re.compile(r"(@[^ \t]*)(?:[ \t]+(.*))?\Z", re.S)
TOKEN = re.compile(r"[^ \t]+")


def skip_blanks(text: str, i: int) -> int:
    """The index of the first non-blank at or after ``i``."""
    n = len(text)
    while i < n and text[i] in BLANKS:
        i += 1
    return i
