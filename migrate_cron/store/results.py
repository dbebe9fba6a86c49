"""What the enqueue operations answer: ``EnqueueResult`` and ``RunResult``.

They live apart from the other value types of ``models.py`` (which re-exports them) because
``enqueue`` from cron (``direct.py``) needs only these: thirteen slotted dataclasses cost about
12 ms to create, a tenth of the time that call may take.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """``created`` is False when the dedupe key (kind, ref) already existed."""

    job_id: int
    created: bool


@dataclass(frozen=True, slots=True)
class RunResult:
    """Result of ``enqueue_run``: one row per (job_name, scheduled_for), whoever asks."""

    created: bool
    job_id: int | None
    outcome: str
