"""An in-memory run ledger with the Store's slot semantics, for ``simulate``.

``simulate`` must show exactly what the scheduler would do without touching the database, so it
drives the real ``Scheduler`` against this ledger: the same insert-if-absent rule on
(job_name, scheduled_for), the same "last recorded slot" answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from migrate_cron.store.models import RunResult
from migrate_cron.vocabulary import SlotOutcome, Tally


@dataclass(frozen=True, slots=True)
class LedgerRow:
    job_name: str
    scheduled_for: datetime
    outcome: str
    job_id: int | None


class MemoryLedger:
    """scheduled_runs in a dict; job ids are a counter."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, datetime], LedgerRow] = {}
        self._last: dict[str, datetime] = {}
        self._ids = itertools.count(1)

    def last_runs(self, job_names: Sequence[str] | None = None) -> dict[str, datetime]:
        if job_names is None:
            return dict(self._last)
        return {n: self._last[n] for n in job_names if n in self._last}

    def enqueue_run(
        self,
        job_name: str,
        scheduled_for: datetime,
        *,
        payload: Any = None,
        max_attempts: int = 5,
        outcome: str = SlotOutcome.ENQUEUED,
        kind: str | None = None,
    ) -> RunResult:
        slot = scheduled_for if scheduled_for.tzinfo is UTC else scheduled_for.astimezone(UTC)
        row = self.rows.get((job_name, slot))
        if row is not None:
            return RunResult(False, row.job_id, row.outcome)
        job_id = next(self._ids) if outcome == SlotOutcome.ENQUEUED else None
        self._put(LedgerRow(job_name, slot, outcome, job_id))
        return RunResult(True, job_id, outcome)

    def enqueue_runs(
        self,
        requests: Sequence[tuple[str, datetime, int]],
        *,
        skip_running: Collection[str] = (),
        hold_running: Collection[str] = (),
        late: Collection[tuple[str, datetime]] = (),
    ) -> list[RunResult]:
        """No job runs in memory, so ``skip_running`` never skips (nor is anything held);
        ``simulate`` shows the decisions, not tallies."""
        del skip_running, hold_running, late
        return [self.enqueue_run(n, s, max_attempts=m) for n, s, m in requests]

    def record_skipped(
        self, job_name: str, slots: Sequence[datetime], *, tally: Tally | None = None
    ) -> list[datetime]:
        del tally
        fresh = []
        for s in slots:
            if self.enqueue_run(job_name, s, outcome=SlotOutcome.SKIPPED).created:
                fresh.append(s.astimezone(UTC))
        return fresh

    def seed(self, job_name: str, slot: datetime) -> None:
        """Pretend ``slot`` ran before the simulated period (not reported as an event)."""
        self._put(LedgerRow(job_name, slot.astimezone(UTC), SlotOutcome.ENQUEUED, None))

    def _put(self, row: LedgerRow) -> None:
        self.rows[(row.job_name, row.scheduled_for)] = row
        last = self._last.get(row.job_name)
        if last is None or row.scheduled_for > last:
            self._last[row.job_name] = row.scheduled_for

    def for_job(self, job_name: str) -> list[LedgerRow]:
        return sorted(
            (r for r in self.rows.values() if r.job_name == job_name),
            key=lambda r: r.scheduled_for,
        )
