"""What the worker loop needs from the place it claims work from.

Two implementations: the queue (``Store``, the ``job`` table) and a business table the
registry describes (``store.row_queue.RowQueue``, ``worker --table``). Both keep the same
guarantees — one owner per claimed item, fenced finishing, leases the reaper takes back — so
the loop, the runner threads, the heartbeat, the fence and the finisher are the same code for
both. A ``Job`` stands for one claimed item: for a table row, ``id`` is the row's key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from migrate_cron.store.base import Listener
from migrate_cron.store.models import AttemptRun, Failure, Job, ReapResult
from migrate_cron.store.workers import WorkerInfo


class WorkSource(Protocol):
    """The named operations the worker calls; see ``store/jobs.py`` for their contracts."""

    @property
    def url_safe(self) -> str: ...

    @property
    def supports_listen(self) -> bool: ...

    def listener(self) -> Listener: ...

    def get(self, job_id: int) -> Job | None: ...

    def attempts_enabled(self) -> bool: ...

    def paused(self) -> dict[str, str]: ...

    def claim(
        self,
        worker_id: str,
        n: int = 1,
        lease: float = 60.0,
        kinds: Sequence[str] | None = None,
        limits: Mapping[str, int] | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Job]: ...

    def heartbeat(self, worker_id: str, ids: Sequence[int], lease: float) -> int: ...

    def owned_jobs(self, worker_id: str, ids: Sequence[int]) -> list[int]: ...

    def write_output(self, worker_id: str, outputs: Mapping[int, str]) -> int: ...

    def complete(
        self,
        worker_id: str,
        ids: Sequence[int],
        outputs: dict[int, str] | None = None,
        then: Mapping[int, Sequence[tuple[str, int]]] | None = None,
        runs: Mapping[int, AttemptRun] | None = None,
        attempts: Mapping[int, int] | None = None,
    ) -> int: ...

    def fail(
        self,
        worker_id: str,
        job_id: int,
        error: str,
        *,
        retry_in: float = 0.0,
        output: str | None = None,
        terminal: bool = False,
        then: Sequence[tuple[str, int]] = (),
        run: AttemptRun | None = None,
        attempt: int | None = None,
    ) -> str | None: ...

    def fail_many(self, worker_id: str, failures: Sequence[Failure]) -> dict[int, str | None]: ...

    def release(
        self, worker_id: str, ids: Sequence[int], attempts: Mapping[int, int] | None = None
    ) -> int: ...

    def fenced_out(self, worker_id: str, attempts: Mapping[int, int]) -> dict[int, str]: ...

    def reap(self, error: str = ...) -> ReapResult: ...

    def acquire_lease(self, name: str, holder: str, ttl: float) -> bool: ...

    def roll_up_trends(self) -> int: ...

    def worker_started(self, info: WorkerInfo) -> bool: ...

    def worker_seen(self, info: WorkerInfo, in_flight: int) -> bool: ...

    def worker_stopped(self, name: str) -> bool: ...
