"""A crontab command's text as the cheap substring tests see it.

What the command does (its calls, wrappers, redirections and name) is read from the shell tree:
:mod:`migrate_cron.analysis.tree`, :mod:`~migrate_cron.analysis.wrappers` and
:mod:`~migrate_cron.analysis.naming`. This holds only the text and its lower-cased form, which
rules use as a fast path before they look at the tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True, slots=True)
class Command:
    text: str
    lower: str


@lru_cache(maxsize=131072)
def read_command(text: str) -> Command:
    return Command(text=text, lower=text.lower())
