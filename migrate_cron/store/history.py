"""How a kind's jobs ended before a given one: what the ``recovered`` notification needs.

One question, "did the kind's job that finished just before this one fail?", asked after a
job succeeded. Answered from the rows, so it holds across worker restarts and across workers
and hosts. "Before" is by ``(finished_at, id)``: the finisher writes a batch of successes with
one timestamp, and of two jobs finished in the same instant the older id counts as first, so
of several successes after a failure exactly one sees the failure before it. Two index probes
on ``(kind, state, finished_at)`` (the newest earlier ``done`` and the newest earlier
``failed``), the same statements on every dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select

from migrate_cron.store.base import StoreBase, aware
from migrate_cron.vocabulary import FINISHED_STATES, JobState


@dataclass(frozen=True, slots=True)
class PreviousOutcome:
    """``recorded``: the asking job's own outcome is written (else nothing can be said yet:
    the finisher writes within milliseconds, or after an outage). ``state``: how the kind's
    job that finished just before it ended — ``done``, ``failed``, or None if none has."""

    recorded: bool
    state: JobState | None = None


class HistoryOps(StoreBase):
    def previous_outcome(self, job_id: int) -> PreviousOutcome:
        """How the job of the same kind that finished last before ``job_id`` ended
        (``done`` or ``failed``; cancelled jobs do not count)."""
        job = self.tables.job
        with self.transaction(readonly=True) as conn:
            mine = conn.execute(
                select(job.c.kind, job.c.state, job.c.finished_at).where(job.c.id == job_id)
            ).first()
            if mine is None or mine.finished_at is None or mine.state not in FINISHED_STATES:
                return PreviousOutcome(recorded=False)
            before = or_(
                job.c.finished_at < mine.finished_at,
                and_(job.c.finished_at == mine.finished_at, job.c.id < job_id),
            )
            newest: dict[JobState, tuple[datetime, int]] = {}
            for state in FINISHED_STATES:
                row: Any = conn.execute(
                    select(job.c.finished_at, job.c.id)
                    .where(job.c.kind == mine.kind, job.c.state == state.value, before)
                    .order_by(job.c.finished_at.desc(), job.c.id.desc())
                    .limit(1)
                ).first()
                if row is not None:
                    newest[state] = (aware(row.finished_at), int(row.id))
        if not newest:
            return PreviousOutcome(recorded=True)
        return PreviousOutcome(recorded=True, state=max(newest, key=lambda s: newest[s]))
