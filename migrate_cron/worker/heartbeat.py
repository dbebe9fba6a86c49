"""Two threads per worker: one keeps its leases alive, the other, now and then, reaps other
workers' expired leases.

Every ``interval`` seconds it extends the lease of every job in the ledger (running, waiting
for a thread, or waiting to be written) with one fenced UPDATE, then stores what running
commands printed since the last beat (``output_so_far.py``), fenced the same way. If fewer
rows come back than were sent, another worker took some over (we were too slow, or paused);
those jobs are cancelled here — a command's process group is killed — so two runs do not
overlap for long, and their outcome is not written.

Self-fencing (``Fence``): a worker that cannot renew — its database connection froze, the
network is cut — must not run a job past its lease, because another worker will take the job
over then. The fence thread needs no database: it looks at when each job's lease was last
extended and, ``margin`` seconds before that lease would end, stops the job's process group
(SIGKILL: a run that ignored SIGTERM would overlap) and drops its outcome. Another worker can
claim the job only after the lease ends, so the two runs never overlap while this worker's
process itself runs; a worker that is frozen whole (SIGSTOP, a paused VM) can overlap by as
long as it is frozen, as with any lease.

The reaper (``Reaper``): every ``reap_interval`` each worker tries the shared ``reaper`` lease
(kept, never released, so at most one reap per interval across all workers) and the holder
returns expired leases to ``open`` (or ``failed`` when out of attempts), then rolls up the
console's trend periods that closed (``store/rollup.py``: a bounded number per turn, off every
job's path). A job whose worker
died is back within ``lease`` + ``reap_interval`` of that worker's last heartbeat. It has a
thread of its own so that a slow reap (thousands of expired leases, a lock wait, a loaded
server) never delays the renewal of this worker's own leases, which the fence would then stop.

After an outage the holder reaps nothing until this worker has written the outcomes it holds
and ``lease`` seconds have passed since the database answered again (``worker/contact.py``):
every lease ran out while nobody could renew it, and living workers get one lease to renew
theirs and write what they hold before a job is taken from them. A job whose worker died
during the outage is then back within ``lease`` + ``reap_interval`` of the database's return.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable

from migrate_cron.store.leases import REAPER_LEASE
from migrate_cron.store.models import Job
from migrate_cron.store.workers import WorkerInfo
from migrate_cron.vocabulary import JobState
from migrate_cron.worker.cancel import LEASE_LOST
from migrate_cron.worker.inflight import Ledger
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.outage import OUTAGE_ERRORS, Outage
from migrate_cron.worker.source import WorkSource


class _Every(threading.Thread):
    """A daemon thread that calls ``tick`` every ``interval`` seconds until asked to stop,
    surviving database outages (one log line per state change and backoff step)."""

    def __init__(
        self,
        what: str,
        log: WorkerLog,
        *,
        interval: float,
        first_after: float,
        outage_cap: float,
        on_contact: Callable[[], None],
        on_outage: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(name=f"migrate-cron-{what}", daemon=True)
        self._what = what
        self._log = log
        self._interval = interval
        self._first_after = first_after
        self._on_contact = on_contact
        self._on_outage = on_outage
        self._stop_event = threading.Event()
        self._outage = Outage(log, what, cap=min(outage_cap, interval))

    def request_stop(self) -> None:
        self._stop_event.set()

    def tick(self) -> bool:
        """One round; True if it had an answer from the database (only an answer ends an
        outage: a round with nothing to ask proves nothing)."""
        raise NotImplementedError

    def run(self) -> None:
        due = time.monotonic() + self._first_after
        while not self._stop_event.wait(max(0.0, due - time.monotonic())):
            due = time.monotonic() + self._interval
            try:
                if self.tick():
                    self._outage.ok()
                    self._on_contact()
            except OUTAGE_ERRORS as exc:
                self._outage.failed(exc)
                self._on_outage()
            except Exception as exc:
                self._log.event("error", f"{self._what}: {type(exc).__name__}: {exc}")


class Heartbeat(_Every):
    def __init__(
        self,
        store: WorkSource,
        worker_id: str,
        ledger: Ledger,
        log: WorkerLog,
        *,
        interval: float,
        lease: float,
        outage_cap: float = 30.0,
        on_contact: Callable[[], None] = lambda: None,
        on_outage: Callable[[], None] = lambda: None,
        on_answer: Callable[[], None] = lambda: None,
        info: WorkerInfo | None = None,
    ) -> None:
        super().__init__(
            "heartbeat",
            log,
            interval=interval,
            first_after=interval,
            outage_cap=outage_cap,
            on_contact=on_contact,
            on_outage=on_outage,
        )
        self._store = store
        self._worker_id = worker_id
        self._ledger = ledger
        self._lease = lease
        self._on_answer = on_answer  # the database answered (not called when nothing was sent)
        self._info = info  # this worker's row (``presence.py``), renewed after the leases

    def tick(self) -> bool:
        renewed = self.beat()
        if self._info is None:
            return renewed
        # The leases first: a slow or failing row write never delays a renewal.
        self._store.worker_seen(self._info, len(self._ledger))
        self._on_answer()
        return True

    def beat(self) -> bool:
        """Renew every lease held; False if there was none (nothing was asked)."""
        ids = self._ledger.ids()
        if not ids:
            return False
        sent = time.monotonic()
        owned = self._store.heartbeat(self._worker_id, ids, self._lease)
        self._on_answer()
        if owned >= len(ids):
            self._ledger.renewed(ids, sent)
            self._store_output(ids)
            return True
        still = set(self._store.owned_jobs(self._worker_id, ids))
        self._ledger.renewed(still, sent)
        self._store_output([i for i in ids if i in still])
        lost = [i for i in ids if i not in still]
        # An operator's cancel stops the run like a deploy would: SIGTERM to its process
        # group, SIGKILL after the kill grace. A job another worker owns now is stopped at once.
        cancelled = [i for i in lost if _is_cancelled(self._store.get(i))]
        taken = [i for i in lost if i not in cancelled]
        for slot in self._ledger.cancel(cancelled, LEASE_LOST):
            self._log.event(
                "cancelled",
                "cancelled by an operator; stopping our run (SIGTERM, then SIGKILL)",
                kind=slot.job.kind,
                id=slot.job.id,
            )
        for slot in self._ledger.cancel(taken, LEASE_LOST, hard=True):
            self._log.event(
                "lease-lost",
                "another worker owns this job now; stopping our run",
                kind=slot.job.kind,
                id=slot.job.id,
            )
        return True

    def _store_output(self, ids: list[int]) -> None:
        """What the running commands printed since the last beat, on their job rows (the
        store fences it: a job someone else holds now is left alone)."""
        outputs = self._ledger.outputs_so_far(ids)
        if outputs:
            self._store.write_output(self._worker_id, outputs)
            self._ledger.outputs_stored(outputs)


class Reaper(_Every):
    """Tries the shared reaper lease every ``interval`` and, holding it, reaps (see the module
    docstring for why this is not the heartbeat's thread)."""

    def __init__(
        self,
        store: WorkSource,
        worker_id: str,
        log: WorkerLog,
        *,
        interval: float,
        outage_cap: float = 30.0,
        on_contact: Callable[[], None] = lambda: None,
        on_outage: Callable[[], None] = lambda: None,
        on_answer: Callable[[], None] = lambda: None,
        settle: float = 0.0,
        back_for: Callable[[], float] = lambda: math.inf,
        holding: Callable[[], bool] = lambda: False,
        write_held: Callable[[], None] = lambda: None,
    ) -> None:
        # The first reap at a random point of the interval, so that workers started together
        # do not all try at once.
        super().__init__(
            "reaper",
            log,
            interval=interval,
            first_after=random.uniform(0, interval),
            outage_cap=outage_cap,
            on_contact=on_contact,
            on_outage=on_outage,
        )
        self._store = store
        self._worker_id = worker_id
        self._on_answer = on_answer
        self._settle = settle  # after an outage: reap this long after the database is back
        self._back_for = back_for
        self._holding = holding
        self._write_held = write_held
        self._waiting = False  # said that this reap waits (once per outage)

    def tick(self) -> bool:
        self.reap()
        return True

    def reap(self) -> None:
        ours = self._store.acquire_lease(REAPER_LEASE, self._worker_id, self._interval)
        self._on_answer()
        if not ours:
            return
        if self._holding():  # what this worker holds goes first
            self._write_held()
            self._say_waiting("this worker's outcomes are written first")
            return
        wait = self._settle - self._back_for()
        if wait > 0:
            self._say_waiting(f"{wait:.1f}s more for workers to renew their leases")
            return
        self._waiting = False
        result = self._store.reap()
        if result.reopened or result.failed:
            self._log.event(
                "reaped",
                "expired leases returned",
                reopened=result.reopened,
                failed=result.failed,
            )
        # The console's trends: closed periods of the history, a bounded number per turn.
        self._store.roll_up_trends()

    def _say_waiting(self, why: str) -> None:
        if not self._waiting:
            self._log.event("reap-waits", f"after the outage, reaping waits: {why}")
            self._waiting = True


def _is_cancelled(job: Job | None) -> bool:
    return job is not None and job.state == JobState.CANCELLED


class Fence(threading.Thread):
    """Stops every job whose lease this worker could not renew in time (see the module
    docstring); no database call, so a frozen connection cannot hold it up."""

    def __init__(self, ledger: Ledger, log: WorkerLog, *, lease: float, margin: float) -> None:
        super().__init__(name="migrate-cron-fence", daemon=True)
        self._ledger = ledger
        self._log = log
        self._keep = max(0.0, lease - margin)  # how long after a renewal a run may go on
        self._tick = max(0.05, min(0.5, margin / 4))
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)

    def run(self) -> None:
        while not self._stop_event.wait(self._tick):
            self.check(time.monotonic())

    def check(self, now: float) -> None:
        expiring = self._ledger.unrenewed(before=now - self._keep)
        if not expiring:
            return
        for slot in self._ledger.cancel([s.job.id for s in expiring], LEASE_LOST, hard=True):
            self._log.event(
                "lease-fenced",
                "could not renew the lease in time; stopped our run, its outcome is dropped "
                "(another worker may take the job over when the lease ends)",
                kind=slot.job.kind,
                id=slot.job.id,
            )
