"""What a business table's queue (``row_queue.py``) answers without a table of its own: the
worker asks every work source the same questions, and a row has no operator cancel, no run
history, no pause, no output column, no reaper turn to take and no trends to roll up; the
worker rows live in the queue's own tables, where any other worker's are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from migrate_cron.store.base import Listener

if TYPE_CHECKING:
    from migrate_cron.store.models import Job
    from migrate_cron.store.store import Store
    from migrate_cron.store.workers import WorkerInfo


class RowQueueQuiet:
    store: Store

    def listener(self) -> Listener:
        return Listener()

    def get(self, job_id: int) -> Job | None:
        """A business row is never cancelled by an operator: nothing to look up."""
        return None

    def attempts_enabled(self) -> bool:
        """No history table applies here (the row keeps its ``last_error``): nothing to
        upgrade, so the loop has nothing to warn about."""
        return True

    def paused(self) -> dict[str, str]:
        return {}

    def worker_started(self, info: WorkerInfo) -> bool:  # the worker rows: the queue's tables
        return self.store.worker_started(info)

    def worker_seen(self, info: WorkerInfo, in_flight: int) -> bool:
        return self.store.worker_seen(info, in_flight)

    def worker_stopped(self, name: str) -> bool:
        return self.store.worker_stopped(name)

    def acquire_lease(self, name: str, holder: str, ttl: float) -> bool:
        """Every worker reaps (see the module docstring): the turn is always ours."""
        return True

    def roll_up_trends(self) -> int:
        """Nothing: the queue's own workers roll up its history (a row has none)."""
        return 0

    def write_output(self, worker_id: str, outputs: Mapping[int, str]) -> int:
        """Nothing: a business row has no place for a run's output (see ``complete``)."""
        return 0
