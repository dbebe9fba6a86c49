"""The ledger of jobs in flight when a retry is claimed again before its last outcome is
settled: the settle belongs to the earlier claim, the new claim stays tracked and runs."""

from __future__ import annotations

from datetime import UTC, datetime

from migrate_cron.store.models import Job
from migrate_cron.worker.inflight import Ledger, Slot

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def job(attempts: int) -> Job:
    return Job(
        1, "k", None, None, "running", attempts, 2, NOW, None, "w", None, None, None, NOW, NOW,
        None,
    )  # fmt: skip


def test_a_retry_claimed_before_its_previous_outcome_settled_keeps_its_slot() -> None:
    ledger = Ledger()
    ledger.add([job(1)])
    assert isinstance(ledger.start(1), Slot)
    assert ledger.finished(1)
    # The finisher wrote attempt 1's failure (retry at once); the claim loop takes attempt 2
    # before the finisher settles attempt 1.
    ledger.add([job(2)])
    ledger.settle([1])  # attempt 1's settle
    assert len(ledger) == 1
    second = ledger.start(1)
    assert isinstance(second, Slot) and second.job.attempts == 2
    assert ledger.finished(1)
    ledger.settle([1])
    assert len(ledger) == 0
