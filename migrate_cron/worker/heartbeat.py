"""One thread per worker that keeps its leases alive and, now and then, reaps other workers'.

Every ``interval`` seconds it extends the lease of every job in the ledger (running, waiting
for a thread, or waiting to be written) with one fenced UPDATE. If fewer rows come back than
were sent, another worker took some over (we were too slow, or paused); those jobs are
cancelled here — a command's process group is killed — so two runs do not overlap for long,
and their outcome is not written.

The reaper rides along: every ``reap_interval`` each worker tries the shared ``reaper`` lease
(kept, never released, so at most one reap per interval across all workers) and the holder
returns expired leases to ``open`` (or ``failed`` when out of attempts). A job whose worker
died is back within ``lease`` + ``reap_interval`` of that worker's last heartbeat.
"""

from __future__ import annotations

import random
import threading
import time

from migrate_cron.store import Store
from migrate_cron.worker.cancel import LEASE_LOST
from migrate_cron.worker.ledger import Ledger
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.outage import OUTAGE_ERRORS, Outage

REAPER_LEASE = "reaper"


class Heartbeat(threading.Thread):
    def __init__(
        self,
        store: Store,
        worker_id: str,
        ledger: Ledger,
        log: WorkerLog,
        *,
        interval: float,
        lease: float,
        reap_interval: float,
        outage_cap: float = 30.0,
    ) -> None:
        super().__init__(name="migrate-cron-heartbeat", daemon=True)
        self._store = store
        self._worker_id = worker_id
        self._ledger = ledger
        self._log = log
        self._interval = interval
        self._lease = lease
        self._reap_interval = reap_interval
        self._stop_event = threading.Event()
        self._outage = Outage(log, "heartbeat", cap=min(outage_cap, interval))

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)

    def run(self) -> None:
        now = time.monotonic()
        next_beat = now + self._interval
        # Spread the first reap so workers started together do not all try at once.
        next_reap = now + random.uniform(0, self._reap_interval)
        while True:
            wait = max(0.0, min(next_beat, next_reap) - time.monotonic())
            if self._stop_event.wait(wait):
                return
            now = time.monotonic()
            try:
                if now >= next_beat:
                    next_beat = now + self._interval
                    self.beat()
                if now >= next_reap:
                    next_reap = now + self._reap_interval
                    self.reap()
                self._outage.ok()
            except OUTAGE_ERRORS as exc:
                self._outage.failed(exc)
            except Exception as exc:
                self._log.event("error", f"heartbeat: {type(exc).__name__}: {exc}")

    def beat(self) -> None:
        ids = self._ledger.ids()
        if not ids:
            return
        owned = self._store.heartbeat(self._worker_id, ids, self._lease)
        if owned >= len(ids):
            return
        still = set(self._store.owned_jobs(self._worker_id, ids))
        lost = [i for i in ids if i not in still]
        slots = self._ledger.cancel(lost, LEASE_LOST, hard=True)
        for slot in slots:
            self._log.event(
                "lease-lost",
                "another worker owns this job now; stopping our run",
                kind=slot.job.kind,
                id=slot.job.id,
            )

    def reap(self) -> None:
        if not self._store.acquire_lease(REAPER_LEASE, self._worker_id, self._reap_interval):
            return
        result = self._store.reap()
        if result.reopened or result.failed:
            self._log.event(
                "reaped",
                "expired leases returned",
                reopened=result.reopened,
                failed=result.failed,
            )
