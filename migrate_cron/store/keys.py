"""Values the Store and the driver-only writer (``direct.py``) must spell the same way: a
slot's job ``ref`` and the PostgreSQL wake-up channel. Standard library only, so the cron
line's ``enqueue`` can import it without SQLAlchemy."""

from __future__ import annotations

from datetime import UTC, datetime


def slot_ref(slot: datetime) -> str:
    """The ``ref`` of a slot's job: its UTC time, so (kind, ref) is unique per slot too."""
    return slot.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def wake_channel(prefix: str) -> str:
    """The LISTEN/NOTIFY channel of the tables under ``prefix``."""
    return f"{prefix}migrate_cron_jobs"
