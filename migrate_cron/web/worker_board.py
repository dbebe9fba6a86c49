"""The Workers page's read model: every worker the queue knows, idle or busy, and whether it
is alive, stopped (it said goodbye) or gone (it stopped heartbeating).

A worker shows itself twice: by its ``job_workers`` row (renewed by its heartbeat, from schema
step 5) and by the running jobs it holds (``locked_by``, whose leases its heartbeat renews).
Either one recent is enough for alive; the silence that means gone is three of the worker's own
heartbeats (it says its ``--heartbeat`` at start), or ``GONE_AFTER`` for a row that does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from migrate_cron.store.workers import GONE_AFTER, MISSED_BEATS
from migrate_cron.vocabulary import JobState, WorkerState

if TYPE_CHECKING:
    from migrate_cron.store import Store
    from migrate_cron.store.models import Job
    from migrate_cron.store.workers import WorkerRecord

#: Running jobs read for the Workers page; more are counted in the totals only.
RUNNING_LIMIT = 1000


@dataclass(frozen=True)
class WorkerRow:
    """A worker: its ``job_workers`` row (where the database has the table and the worker
    wrote one) and the running jobs it holds (``locked_by``). Its heartbeat renews both, so
    a recent ``last_seen`` or a lease still running means it is alive; a worker that said
    goodbye is stopped; any other is gone."""

    name: str
    jobs: list[Job]
    lease_left: float | None
    record: WorkerRecord | None = None
    gone_after: float = GONE_AFTER

    @property
    def silence_limit(self) -> float:
        """Seconds without a heartbeat after which this worker is gone."""
        beat = self.record.heartbeat if self.record is not None else None
        return MISSED_BEATS * beat if beat else self.gone_after

    @property
    def state(self) -> WorkerState:
        if self.record is not None and self.record.stopped_at is not None:
            return WorkerState.STOPPED
        if self.record is not None and self.record.seen_ago <= self.silence_limit:
            return WorkerState.ALIVE
        if self.lease_left is not None and self.lease_left > 0:
            return WorkerState.ALIVE
        return WorkerState.GONE

    @property
    def alive(self) -> bool:
        return self.state is WorkerState.ALIVE

    @property
    def seen_ago(self) -> float | None:
        return self.record.seen_ago if self.record is not None else None


@dataclass(frozen=True)
class WorkerBoard:
    workers: list[WorkerRow]
    leader: tuple[str, float] | None
    running_total: int
    #: Whether the database keeps worker rows (schema step 5): without them only workers
    #: that run jobs show.
    rows_kept: bool = True

    def count(self, state: str) -> int:
        return sum(1 for w in self.workers if w.state == state)


def workers(store: Store, gone_after: float = GONE_AFTER) -> WorkerBoard:
    """Every worker seen in the last day, idle or busy, and those only running jobs name."""
    from migrate_cron.store.leases import SCHEDULER_LEASE
    from migrate_cron.web.pages import leader_of

    now = store.db_now()
    running = store.list_jobs(state=JobState.RUNNING, limit=RUNNING_LIMIT)
    total = store.count_jobs(states=(JobState.RUNNING,))
    rows = merge_workers(store.workers(), group_workers(running, now), gone_after)
    leader = leader_of(store, now, SCHEDULER_LEASE)
    return WorkerBoard(rows, leader, total, store.console_enabled())


def group_workers(running: Sequence[Job], now: datetime) -> list[WorkerRow]:
    by_worker: dict[str, list[Job]] = {}
    for job in running:
        by_worker.setdefault(job.locked_by or "(unknown)", []).append(job)
    rows = []
    for name, jobs in sorted(by_worker.items()):
        leases = [j.locked_until for j in jobs if j.locked_until is not None]
        left = (max(leases) - now).total_seconds() if leases else None
        rows.append(WorkerRow(name, sorted(jobs, key=lambda j: j.id), left))
    return rows


#: The order of the states on the page: who works, who vanished, who left.
STATE_ORDER = {WorkerState.ALIVE: 0, WorkerState.GONE: 1, WorkerState.STOPPED: 2}


def merge_workers(
    records: Sequence[WorkerRecord], busy: Sequence[WorkerRow], gone_after: float = GONE_AFTER
) -> list[WorkerRow]:
    """The worker rows with the jobs each holds, and the workers known only from running jobs
    (a worker of an older version, a database before step 5); alive first, then by host."""
    holding = {w.name: w for w in busy}
    rows = [
        WorkerRow(
            r.name,
            holding[r.name].jobs if r.name in holding else [],
            holding[r.name].lease_left if r.name in holding else None,
            r,
            gone_after,
        )
        for r in records
    ]
    known = {r.name for r in records}
    rows += [replace(w, gone_after=gone_after) for w in busy if w.name not in known]
    return sorted(
        rows,
        key=lambda w: (STATE_ORDER[w.state], w.record.host if w.record else "", w.name),
    )
