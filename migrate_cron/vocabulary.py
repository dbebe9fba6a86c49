"""Words with one meaning across the project, defined once: missed-run policies and modes.

StrEnums, so a value read from a registry file or a database compares equal to its member and
prints as itself. Job states are ``store.models.JobState``; analysis rule ids live with the
rules that define them.
"""

from __future__ import annotations

from enum import StrEnum


class Policy(StrEnum):
    """What the scheduler does with the slots a job missed while nothing was scheduling."""

    SKIP = "skip"
    RUN_ONCE = "run-once"
    BACKFILL = "backfill"


class Mode(StrEnum):
    """Who fires a registry job's slots: cron itself (not switched), cron running
    ``migrate-cron enqueue`` (``enqueue``), or the scheduler service (``scheduler``)."""

    CRON = "cron"
    ENQUEUE = "enqueue"
    SCHEDULER = "scheduler"
