"""Values the Store and the driver-only writer (``direct.py``) must spell the same way: a
slot's job ``ref``, a follow-up job's ``ref`` and the PostgreSQL wake-up channel. Standard
library only, so the cron line's ``enqueue`` can import it without SQLAlchemy."""

from __future__ import annotations

from datetime import UTC, datetime


def slot_ref(slot: datetime) -> str:
    """The ``ref`` of a slot's job: its UTC time, so (kind, ref) is unique per slot too."""
    return slot.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


#: How the ``ref`` of a job enqueued by another job's outcome (``on_success``/``on_failure``)
#: begins: it carries its parent's slot in ``scheduled_for`` but became due when the parent
#: finished, so the age of the oldest ready job must not count from that slot.
CHAIN_REF_PREFIX = "after:"


def chain_ref(parent_id: int) -> str:
    """The ``ref`` of the job a parent's outcome enqueues: one per parent and kind."""
    return f"{CHAIN_REF_PREFIX}{parent_id}"


def wake_channel(prefix: str) -> str:
    """The LISTEN/NOTIFY channel of the tables under ``prefix``."""
    return f"{prefix}migrate_cron_jobs"
