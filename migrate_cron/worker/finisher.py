"""Writes outcomes to the database in small batches, each fenced by the attempt that ran.

Outcomes wait here for at most ``flush_interval`` (a few ms) or until ``flush_max`` are waiting,
then go out as one ``complete`` for all successes, one ``release`` for all give-backs, and one
fenced ``fail`` per failure. Until written, a job stays ``running`` under this worker's lease
and in the ledger, so the heartbeat keeps extending it.

What a crash between running a job and this write costs: nothing is lost and nothing is
recorded twice — the job's lease expires, the reaper reopens it, and it runs once more
(at-least-once). So a crash may repeat the jobs that finished in the last few milliseconds;
each repeat counts as an attempt (on the last attempt the reaper shelves it as ``failed`` with
"lease expired"). A late write cannot overwrite another run: every write is fenced by the
attempt it records (``store/fence.py``) — it lands while nobody else has claimed the job, even
if the lease ran out meanwhile, and changes nothing once another attempt took it over or it is
finished. An outcome that does not land is logged (``outcome-dropped``: job, attempt, why).

A database outage keeps the outcomes here and retries with a capped backoff; retrying a batch
is safe because every write is fenced (a repeated ``complete`` matches no row). When the
database answers again the worker wakes the finisher at once (``retry_now``), and its reaper
takes no lease back while this worker still holds outcomes (``holding``): what it holds is
written first.

A batch that fails for any other reason (a value the database refuses) is written again one
outcome at a time, so one bad outcome never costs the others theirs; an outcome refused alone
is written once more with its output and error in plain ASCII (``store.storable.escaped``: what a
latin1 column or a full TEXT column still takes), so a ``done`` stays ``done``. Only an outcome
that even so cannot be written is recorded as a terminal failure naming why (its output left
out), and if even that fails, only its lease is left to expire. Log lines name the error, never the
job's output or a statement's parameters.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from migrate_cron.store.base import describe_error
from migrate_cron.store.models import AttemptRun, Failure, Job
from migrate_cron.store.storable import escaped
from migrate_cron.worker.inflight import Ledger
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.outage import OUTAGE_ERRORS, Outage
from migrate_cron.worker.outcome import DONE, FAILED, RELEASE, Outcome, attempt_run
from migrate_cron.worker.source import WorkSource

#: The outcomes ``_flush`` writes (a lost run's outcome is dropped without a database call).
WRITTEN = frozenset({DONE, FAILED, RELEASE})


class Held(NamedTuple):
    """An outcome waiting to be written, with the attempt it is the outcome of."""

    job_id: int
    attempt: int
    outcome: Outcome
    #: The job's ``run_at`` at the claim: when the run's wait began (the attempt history).
    ready_at: datetime | None = None


class Finisher(threading.Thread):
    def __init__(
        self,
        store: WorkSource,
        worker_id: str,
        ledger: Ledger,
        log: WorkerLog,
        *,
        interval: float = 0.005,
        max_items: int = 100,
        outage_cap: float = 30.0,
        on_outage: Callable[[], None] = lambda: None,
        on_written: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(name="migrate-cron-finisher", daemon=True)
        self._store = store
        self._worker_id = worker_id
        self._ledger = ledger
        self._log = log
        self._interval = interval
        self._max = max_items
        self._items: deque[Held] = deque()
        self._lock = threading.Lock()
        self._kick = threading.Event()  # first item of a batch, a full batch, or stop
        self._stopping = False
        self._outage = Outage(log, "recording job outcomes", cap=outage_cap)
        self._give_up_at: float | None = None
        self._retry = threading.Event()  # the database is back, or stop: try again now
        self._stalled = False  # a write is waiting out an outage
        self._on_outage = on_outage
        self._on_written = on_written
        self.unwritten = 0  # outcomes dropped because the database stayed down at shutdown

    def put(self, job: Job, outcome: Outcome) -> None:
        """Queue the outcome of ``job``'s attempt. Only the first of a batch and a full batch
        wake the writer, not every job: no thread ping-pong per job at thousands of jobs per
        second."""
        with self._lock:  # append and count together: exactly one put sees the first item
            self._items.append(Held(job.id, job.attempts, outcome, job.run_at))
            waiting = len(self._items)
        if waiting == 1 or waiting >= self._max:
            self._kick.set()

    def holding(self) -> bool:
        """Outcomes are waiting for the database (a write failed and has not succeeded
        since): the reaper lets them go first."""
        return self._stalled

    def retry_now(self) -> None:
        """The database answers again: end the wait between retries now."""
        if self._stalled:
            self._retry.set()

    def stop(self, give_up_after: float) -> None:
        """Write everything still waiting, trying for at most ``give_up_after`` s, then end."""
        self._give_up_at = time.monotonic() + give_up_after
        self._stopping = True
        self._retry.set()  # cut short a wait between retries
        self._kick.set()
        self.join(give_up_after + 5)

    def run(self) -> None:
        items = self._items
        while True:
            self._kick.wait()
            self._kick.clear()
            if not self._stopping and len(items) < self._max:
                self._kick.wait(self._interval)  # let the batch fill for a few ms
                self._kick.clear()
            while items:
                batch: list[Held] = []
                while items and len(batch) < self._max:
                    batch.append(items.popleft())
                self._flush_retrying(batch)
            if self._stopping and not items:
                return

    def _flush_retrying(self, items: list[Held]) -> None:
        """Write a batch; wait out outages. A batch that fails for another reason is written
        one outcome at a time (``_flush_each``)."""
        while True:
            try:
                if self._flush(items):  # only a write proves the database answers
                    self._outage.ok()
                    self._stalled = False
                    self._on_written()
                return
            except OUTAGE_ERRORS as exc:
                wait = self._outage.failed(exc)
                self._stalled = True
                self._on_outage()
            except Exception as exc:
                self._log.event(
                    "error",
                    f"recording {len(items)} job outcome(s): {describe_error(exc)}; "
                    "writing them one by one",
                )
                outage = self._flush_each(items)
                if outage is None:
                    return
                wait = self._outage.failed(outage)
                self._stalled = True
                self._on_outage()
            if self._give_up_at is None:
                self._retry.wait(wait)
                if not self._stopping:
                    self._retry.clear()
                continue
            remaining = self._give_up_at - time.monotonic()
            if remaining <= 0:
                self._drop(items)
                return
            time.sleep(min(wait, remaining))

    def _flush_each(self, items: list[Held]) -> BaseException | None:
        """Write outcomes one at a time; returns the outage that interrupted it, if any (the
        batch is then retried whole, which is safe: every write is fenced)."""
        for item in items:
            try:
                self._flush([item])
                continue
            except OUTAGE_ERRORS as exc:
                return exc
            except Exception as exc:
                reason = describe_error(exc)
            job_id, attempt, outcome, _ = item
            try:  # the same outcome with its text in plain ASCII (store/base.py: escaped)
                plain = replace(
                    outcome, error=escaped(outcome.error), output=escaped(outcome.output)
                )
                self._flush([item._replace(outcome=plain)])
                self._log.event(
                    "escaped",
                    f"job {job_id}: its {outcome.status} outcome is stored with its text "
                    f"escaped ({reason})",
                    job=job_id,
                )
                continue
            except OUTAGE_ERRORS as exc:
                return exc
            except Exception as exc:
                reason = describe_error(exc)
            self._log.event(
                "unstorable",
                f"job {job_id}: its {outcome.status} outcome could not be stored ({reason})",
                job=job_id,
            )
            try:
                self._store.fail(
                    self._worker_id,
                    job_id,
                    f"the run's outcome ({outcome.status}) could not be stored: {reason}",
                    terminal=True,
                    attempt=attempt,
                )
                self._ledger.settle([job_id])
            except OUTAGE_ERRORS as exc:
                return exc
            except Exception as exc:
                self._log.event("error", f"job {job_id}: {describe_error(exc)}", job=job_id)
                self._drop([item])
        return None

    def _drop(self, items: list[Held]) -> None:
        self.unwritten += len(items)
        self._log.event(
            "unrecorded",
            f"could not record {len(items)} outcome(s); their leases will expire and the jobs "
            "run again",
        )
        self._ledger.settle(item.job_id for item in items)

    def _flush(self, items: list[Held]) -> bool:
        """Write ``items``; False if none needed a write (outcomes dropped as lost)."""
        done: list[int] = []
        outputs: dict[int, str] = {}
        then: dict[int, tuple[tuple[str, int], ...]] = {}
        runs: dict[int, AttemptRun] = {}
        released: list[int] = []
        attempts = {item.job_id: item.attempt for item in items}
        for job_id, _, outcome, ready_at in items:
            if outcome.status == DONE:
                done.append(job_id)
                if outcome.output:
                    outputs[job_id] = outcome.output
                if outcome.then:
                    then[job_id] = outcome.then
                run = attempt_run(outcome, ready_at)
                if run is not None:
                    runs[job_id] = run
            elif outcome.status == RELEASE:
                released.append(job_id)
        store, me = self._store, self._worker_id
        if done:
            ran = {job_id: attempts[job_id] for job_id in done}
            written = store.complete(
                me, done, outputs or None, then or None, runs or None, attempts=ran
            )
            if written < len(done):
                self._log_dropped(DONE, ran)
        failures: list[Failure] = []
        for job_id, attempt, outcome, ready_at in items:
            if outcome.status != FAILED:
                continue
            run = attempt_run(outcome, ready_at)
            error = outcome.error or "failed"
            if not outcome.then:  # written together below
                retry_in, output, terminal = outcome.retry_in, outcome.output, outcome.terminal
                failures.append(Failure(job_id, attempt, error, retry_in, output, terminal, run))
                continue
            state = store.fail(
                me,
                job_id,
                error,
                retry_in=outcome.retry_in,
                output=outcome.output,
                terminal=outcome.terminal,
                then=outcome.then,
                run=run,
                attempt=attempt,
            )
            if state is None:
                self._log_dropped(FAILED, {job_id: attempt})
        if failures:
            states = store.fail_many(me, failures)
            dropped = {f.job_id: attempts[f.job_id] for f in failures if not states.get(f.job_id)}
            if dropped:
                self._log_dropped(FAILED, dropped)
        if released:
            store.release(me, released, attempts={i: attempts[i] for i in released})
        self._ledger.settle(item.job_id for item in items)
        return any(item.outcome.status in WRITTEN for item in items)

    def _log_dropped(self, status: str, attempts: dict[int, int]) -> None:
        """One line per outcome the fence kept out, with the reason read back. Never raises:
        the write itself is done, only the explanation may be missing."""
        try:
            reasons = self._store.fenced_out(self._worker_id, attempts)
        except Exception as exc:
            self._log.event(
                "outcome-dropped",
                f"{status} outcomes of jobs {', '.join(map(str, sorted(attempts)))}: not all "
                f"written (fenced out); could not read which or why: {describe_error(exc)}",
            )
            return
        for job_id, why in sorted(reasons.items()):
            self._log.event(
                "outcome-dropped",
                f"the run's {status} outcome is not written: {why}",
                id=job_id,
                attempt=attempts[job_id],
            )
