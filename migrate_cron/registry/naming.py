"""Registry names: the analysis's readable name for a line, made safe and unique.

A name is what a team types (``migrate-cron migrate invoices-export``) and what the queue stores
as the job's kind, so it must read like the job and never change by itself. The readable part
comes from the analysis (``migrate_cron.analysis.command``: wrappers, interpreters and framework
runners skipped — ``cd /srv && php artisan invoices:export`` → ``invoices-export``), so ``plan``,
``analyze`` and the registry use the same words. This module only makes it a valid, unique
registry key: ``[a-z0-9-]`` (safe in a shell, a crontab line, TOML and SQL), at most 60
characters, ``-2``, ``-3``… when taken. Stability across re-runs comes from the registry writer,
which keeps the name of every job it recognises and never renames one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_LENGTH = 60


def registry_name(suggested: str, taken: Iterable[str]) -> str:
    """``suggested`` as a registry key, with the first free ``-N`` suffix if it is taken."""
    base = re.sub(r"[^a-z0-9]+", "-", suggested.lower()).strip("-")[:MAX_LENGTH].rstrip("-")
    return unique_name(base or "job", taken)


def unique_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… — the first one not in ``taken``."""
    used = taken if isinstance(taken, set | frozenset) else set(taken)
    if base not in used:
        return base
    n = 2
    while f"{base}-{n}" in used:
        n += 1
    return f"{base}-{n}"
