"""The worker loop: claim in batches, run concurrently, write outcomes in small batches.

Threads, and who owns what:

- the claim loop (the caller's thread) claims up to ``batch`` jobs whenever half a batch of
  room is free, and waits — on LISTEN where the store can, elsewhere a bounded idle
  backoff — when the queue is empty;
- ``concurrency`` runner threads take claimed jobs from a queue and run them (``Catalog``);
- one heartbeat thread extends every lease this worker holds, one reaper thread runs the
  shared reaper (so a slow reap never delays a renewal);
- one finisher thread writes outcomes in batches every few ms.

Every thread tells ``Contact`` when a database call fails and when one answers: after an
outage the finisher is woken at once to write what it holds, and the reaper waits until that
is written and one lease has passed, so no living worker's finished job runs again.

The loop knows no SQL: it calls the named operations of a ``WorkSource`` (the queue's ``Store``,
or a business table's ``RowQueue`` for ``worker --table``), and survives the database going
away (one log line per try, capped backoff, carry on). How it waits for work and for the
database is ``waiting.py``.

Shutdown (``request_stop``; the CLI calls it on SIGTERM/SIGINT): stop claiming; jobs claimed
but not started are released at once (the attempt not counted); running jobs get ``grace``
seconds; then commands are stopped (their process group gets SIGTERM, then SIGKILL) and
released. A second request skips the grace and SIGKILLs at once. Python handlers cannot be
killed in their thread: after the grace their jobs are released and ``WorkerSummary.abandoned``
tells the caller to end the process without waiting for them (the CLI does ``os._exit``).
What stops and releases them is ``stopping.py``.
"""

from __future__ import annotations

import os
import queue
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from migrate_cron.store.leases import SCHEDULER_PAUSE
from migrate_cron.store.models import Job
from migrate_cron.worker.backoff import IdleBackoff
from migrate_cron.worker.catalog import Catalog
from migrate_cron.worker.claim_size import ClaimSize
from migrate_cron.worker.contact import Contact
from migrate_cron.worker.finisher import Finisher
from migrate_cron.worker.heartbeat import Fence, Heartbeat, Reaper
from migrate_cron.worker.inflight import Ledger, Slot
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.metrics import WorkerMetrics
from migrate_cron.worker.outage import OUTAGE_ERRORS, Outage
from migrate_cron.worker.outcome import Outcome, run_end
from migrate_cron.worker.presence import goodbye, hello, worker_info
from migrate_cron.worker.settings import WorkerSettings
from migrate_cron.worker.source import WorkSource
from migrate_cron.worker.stopping import ended_by_our_stop, release_queued, stop_running
from migrate_cron.worker.waiting import SLICE, Waiting

if TYPE_CHECKING:
    from migrate_cron.notify.sender import Notifier

#: Seconds between reads of the paused kinds (a pause takes effect within this).
PAUSE_REFRESH = 2.0
#: Seconds a stopping worker gives queued notifications (each delivery is bounded too).
NOTIFY_DRAIN = 10.0


def make_worker_id() -> str:
    """``host:pid:random`` — unique per process start, readable in ``locked_by``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclass(frozen=True)
class WorkerSummary:
    worker_id: str
    started: int  # jobs whose code was started
    abandoned: bool  # Python handler threads still running after shutdown
    unrecorded: int  # outcomes not written because the database stayed down at shutdown


class Worker:
    def __init__(
        self,
        store: WorkSource,
        catalog: Catalog,
        settings: WorkerSettings,
        *,
        log: WorkerLog | None = None,
        worker_id: str | None = None,
        notifier: Notifier | None = None,
        metrics: CollectorRegistry | None = None,
    ) -> None:
        self.store = store
        self.notifier = notifier
        self.catalog = catalog
        self.settings = settings
        self.log = log or WorkerLog()
        self.worker_id = worker_id or make_worker_id()
        self.ledger = Ledger()
        self.claim_size = ClaimSize(settings.concurrency, settings.batch)
        self.metrics = WorkerMetrics(
            metrics or CollectorRegistry(), running=lambda: len(self.ledger.running())
        )
        self._dispatch: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._force = threading.Event()
        self._stop_requests = 0
        self._started = [0] * settings.concurrency
        self._waiting = Waiting(store, settings, self.log, self._stopping)
        self.contact = Contact(settings.lease_seconds - settings.heartbeat, on_back=self._back)
        self.info = worker_info(
            self.worker_id, self._claimable(), settings.concurrency, settings.heartbeat
        )
        contact = self.contact
        self._finisher = Finisher(
            store,
            self.worker_id,
            self.ledger,
            self.log,
            interval=settings.flush_interval,
            max_items=settings.flush_max,
            outage_cap=settings.outage_cap,
            on_outage=contact.failed,
            on_written=contact.ok,
        )
        self._heartbeat = Heartbeat(
            store,
            self.worker_id,
            self.ledger,
            self.log,
            interval=settings.heartbeat,
            lease=settings.lease_seconds,
            outage_cap=settings.outage_cap,
            on_contact=self.metrics.contact,
            on_outage=contact.failed,
            on_answer=contact.ok,
            info=self.info,
        )
        self._reaper = Reaper(
            store,
            self.worker_id,
            self.log,
            interval=settings.reap_interval,
            outage_cap=settings.outage_cap,
            on_contact=self.metrics.contact,
            on_outage=contact.failed,
            on_answer=contact.ok,
            settle=settings.lease_seconds,
            back_for=contact.back_for,
            holding=self._finisher.holding,
            write_held=self._finisher.retry_now,
        )
        self._fence = Fence(
            self.ledger,
            self.log,
            lease=settings.lease_seconds,
            # Late enough that a slow heartbeat or two do not stop healthy runs, early enough
            # that the run is gone before the lease ends and the reaper may hand the job on.
            margin=min(settings.heartbeat / 2, settings.lease_seconds / 6, 2.0),
        )
        self._runners = [
            threading.Thread(
                target=self._run_jobs, args=(i,), name=f"migrate-cron-runner-{i}", daemon=True
            )
            for i in range(settings.concurrency)
        ]

    # ------------------------------------------------------------------ control
    def request_stop(self) -> None:
        """First call: finish gracefully. Second: stop now. From a signal handler, call it in a
        new thread (``threading.Thread(target=w.request_stop).start()``): setting an Event from
        a handler could deadlock if the signal lands while the main thread holds its lock."""
        self._stop_requests += 1
        self._stopping.set()
        if self._stop_requests >= 2:
            self._force.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self) -> WorkerSummary:
        """Run until stopped (or, with ``once``, until no job is ready and none is in flight).

        Raises DatabaseUnavailable / SchemaMissing only if the database is unusable at start;
        later outages are waited out.
        """
        try:
            self.store.get(0)  # fail fast on a wrong URL or missing tables
        except OUTAGE_ERRORS:
            if not self.stopping:
                raise
            # Stopped while waiting for a database that does not answer: nothing was claimed.
            if self.notifier is not None:
                self.notifier.close(drain=0)
            self.log.event("worker-stop", f"worker {self.worker_id} stopped, never started", jobs=0)
            return WorkerSummary(self.worker_id, 0, False, 0)
        self._waiting.open()
        s = self.settings
        self.log.event(
            "worker-start",
            f"worker {self.worker_id} on {self.store.url_safe}",
            concurrency=s.concurrency,
            batch=s.batch if s.batch is not None else "auto",
            lease=s.lease_seconds,
            heartbeat=s.heartbeat,
            kinds=_kinds_text(self._claimable()),
        )
        for kind, error in sorted(self.catalog.refused.items()):
            self.log.event("registry-error", f"job {kind!r} is left out (not claimed): {error}")
        for kind, why in sorted(self.catalog.unrunnable.items()):
            self.log.event("not-claimed", f"job {kind!r} is left to other workers: {why}")
        if not self.store.attempts_enabled():
            self.log.event(
                "no-history",
                "the job_attempts table is missing: runs are not recorded in the history "
                "(run `migrate-cron db upgrade`)",
            )
        hello(self.store, self.info, self.log)
        self._heartbeat.start()
        self._reaper.start()
        self._fence.start()
        self._finisher.start()
        for t in self._runners:
            t.start()
        abandoned = False
        try:
            self._claim_loop()
        finally:
            abandoned = self._shutdown()
            if self.notifier is not None:
                self.notifier.close(drain=NOTIFY_DRAIN)
        summary = WorkerSummary(
            self.worker_id, sum(self._started), abandoned, self._finisher.unwritten
        )
        self.log.event("worker-stop", f"worker {self.worker_id} stopped", jobs=summary.started)
        return summary

    # ------------------------------------------------------------------ claiming
    def _claimable(self) -> list[str] | None:
        """The kinds this worker claims: ``--kinds``, else every kind it can run (registry jobs
        and @handlers); None (any kind) only with ``any_kind``. A kind no worker can run is
        never claimed: it waits, visible in ``status``, instead of failing on attempt 1."""
        s = self.settings
        if s.any_kind:
            return None
        return list(s.kinds) or sorted(self.catalog.tasks)

    def _claim_loop(self) -> None:
        s = self.settings
        idle = IdleBackoff(s.poll_min, s.poll)
        outage = Outage(self.log, "claiming jobs", cap=s.outage_cap)
        kinds = self._claimable()
        limits = self.catalog.limits()
        paused: list[str] = []
        paused_read = -PAUSE_REFRESH
        while not self._stopping.is_set():
            size = self.claim_size
            capacity, refill_at = size.capacity, size.refill_at
            room = self.ledger.room(capacity)
            if room < refill_at and len(self.ledger):
                self.ledger.wait_for_room(refill_at, capacity, SLICE)
                continue
            self._waiting.reopen()
            sent = time.monotonic()
            try:
                asked = sent - paused_read >= PAUSE_REFRESH
                if asked:
                    paused = self._paused(paused)
                    paused_read = sent
                plan = size.plan(room, self.ledger.room(s.concurrency), kinds)
                jobs = []
                if plan.now:
                    jobs = self.store.claim(
                        self.worker_id, plan.now, s.lease_seconds, kinds, limits, paused
                    )
                if plan.ahead:
                    jobs += self.store.claim(
                        self.worker_id, plan.ahead, s.lease_seconds, list(plan.short), limits,
                        paused,
                    )  # fmt: skip
                if asked or plan.now or plan.ahead:  # only an answer ends an outage
                    outage.ok()
                    self.metrics.contact()
                    self.contact.ok()
            except OUTAGE_ERRORS as exc:
                self.contact.failed()
                self._waiting.wait_out(outage.failed(exc))
                continue
            if jobs:
                idle.reset()
                self.ledger.add(jobs, sent)
                for job in jobs:
                    self._dispatch.put(job)
                continue
            if not plan.now and len(self.ledger):
                # Every thread is busy and no short job is ready: claim again when one frees
                # (then any kind), not on a timer.
                self.ledger.wait_for_room(1, s.concurrency, SLICE)
                continue
            if s.once:
                if not len(self.ledger):
                    return
                self.ledger.wait_change(SLICE)
                continue
            self._waiting.idle(idle)

    def _back(self) -> None:
        """The database answers again: write what is held, and claim, without waiting for
        the rest of a backoff."""
        self._finisher.retry_now()
        self._waiting.back()

    def _paused(self, before: list[str]) -> list[str]:
        """The kinds paused now (``migrate-cron pause``); says once when one changes."""
        now = sorted(k for k in self.store.paused() if k != SCHEDULER_PAUSE)
        for kind in sorted(set(now) - set(before)):
            self.log.event("paused", f"kind {kind!r} is paused: not claiming it")
        for kind in sorted(set(before) - set(now)):
            self.log.event("resumed", f"kind {kind!r} is resumed")
        return now

    # ------------------------------------------------------------------ running
    def _run_jobs(self, index: int) -> None:
        while True:
            job = self._dispatch.get()
            if job is None:
                return
            slot = self.ledger.start(job.id)
            if not isinstance(slot, Slot):
                # Not started: closing (give it back) or our lease was lost (write nothing).
                self._finisher.put(job, Outcome.release() if slot == "closed" else Outcome.lost())
                continue
            self._started[index] += 1
            self.log.job_start(job)
            started_at = datetime.now(UTC)
            t0 = time.monotonic()
            try:
                outcome = self.catalog.run(job, self.worker_id, slot.cancel, slot.output)
            except Exception as exc:  # our bug, not the job's: count the attempt, keep going
                outcome = Outcome.failed(f"worker error: {type(exc).__name__}: {exc}")
            duration = time.monotonic() - t0
            if ended_by_our_stop(outcome, self._stopping):
                outcome = Outcome.release()
            outcome = outcome.timed(started_at, duration)
            self.claim_size.observe(job.kind, duration)
            if not self.ledger.finished(job.id):
                continue  # abandoned at shutdown and already released
            self.log.job_finish(job, outcome, duration)
            self.metrics.finished(job.kind, outcome.status, duration)
            self._finisher.put(job, outcome)
            if self.notifier is not None:
                self.notifier.job_finished(job, run_end(outcome), duration)

    # ------------------------------------------------------------------ shutdown
    def _shutdown(self) -> bool:
        s = self.settings
        self.ledger.close()
        self._waiting.close()
        release_queued(self._dispatch, self._finisher)
        running = self.ledger.running()
        if running and not self._force.is_set():
            self.log.event(
                "stopping",
                f"waiting up to {s.grace:g}s for {len(running)} running job(s); "
                "signal again to stop them now",
            )
        deadline = time.monotonic() + s.grace
        while self.ledger.running() and not self._force.is_set() and time.monotonic() < deadline:
            self.ledger.wait_change(0.1)
        stuck = stop_running(self.ledger, self._finisher, self.log, self._force, s.kill_grace)
        for _ in self._runners:
            self._dispatch.put(None)
        for t in self._runners:
            t.join(0 if stuck else 2)
        self._finisher.stop(give_up_after=max(5.0, min(s.outage_cap, 30.0)))
        self._heartbeat.request_stop()
        self._reaper.request_stop()
        until = time.monotonic() + 10  # both at once: a frozen connection costs 10 s, not 20
        for t in (self._heartbeat, self._reaper):
            t.join(max(0.0, until - time.monotonic()))
        self._fence.stop()
        if not self._finisher.unwritten:  # the database answered to the end: say goodbye
            goodbye(self.store, self.worker_id, self.log)
        return bool(stuck) or any(t.is_alive() for t in self._runners)


def _kinds_text(kinds: list[str] | None) -> str:
    """The claimed kinds for the start line: a few by name, then how many more."""
    if kinds is None:
        return "any"
    if not kinds:
        return "none (no registry job or handler to run)"
    shown = ",".join(kinds[:8])
    return shown if len(kinds) <= 8 else f"{shown},… ({len(kinds)} kinds)"
