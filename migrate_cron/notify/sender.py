"""The worker's notifier: decides which events a finished job raises and sends them from one
background thread, so a slow or dead mail server never holds a runner or changes an outcome.

The queue is bounded (a flood of failures drops notifications, counted and logged, instead of
growing without end); each delivery is bounded by ``[notify] timeout``; at shutdown what is
queued gets ``drain`` seconds. Counters (sent, failed, dropped per transport) are exposed with
``migrate-cron worker --metrics-port``.
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter

from migrate_cron.notify.event import OUTPUT_TAIL, Event, RunEnd, clean, exit_code, hostname
from migrate_cron.notify.transports import DeliveryError, deliver
from migrate_cron.registry.notify_targets import LOCAL_USER, NotifySettings, Target
from migrate_cron.vocabulary import JobState, NotifyEvent

if TYPE_CHECKING:
    from migrate_cron.registry import JobSpec
    from migrate_cron.store.history import PreviousOutcome
    from migrate_cron.store.models import Job

QUEUE_SIZE = 1000
#: Seconds the sender waits for a success to be written before asking what came before it.
RECORD_WAIT = 5.0


@dataclass(frozen=True)
class _Item:
    event: Event
    targets: tuple[Target, ...]
    #: For ``recovered``: asked in the sender thread (it reads the database), never by a runner.
    check: Callable[[], bool] | None = None


class Notifier:
    def __init__(
        self,
        settings: NotifySettings,
        specs: Mapping[str, JobSpec],
        log: Callable[[str, str], None],
        previous_outcome: Callable[[int], PreviousOutcome] | None = None,
    ) -> None:
        self._settings = settings
        self._specs = specs
        self._log = log
        self._previous_outcome = previous_outcome
        self._queue: queue.Queue[_Item | None] = queue.Queue(QUEUE_SIZE)
        self._host = hostname()
        self._local_mail = settings.smtp is not None or shutil.which(settings.sendmail) is not None
        self.registry = CollectorRegistry(auto_describe=True)
        self._count = Counter(
            "migrate_cron_notifications",
            "Notifications by transport and result (sent, failed, dropped).",
            ["transport", "result"],
            registry=self.registry,
        )
        self._thread = threading.Thread(target=self._run, name="migrate-cron-notify", daemon=True)
        self._thread.start()

    def job_finished(self, job: Job, outcome: RunEnd, duration: float) -> None:
        """Called by a runner after the outcome is handed to the finisher: never blocks."""
        spec = self._specs.get(job.kind)
        if spec is None or not spec.notify_targets:
            return
        events = set(spec.notify_on)
        raised: list[tuple[str, Callable[[], bool] | None]] = []
        if outcome.failed:
            final = outcome.terminal or job.attempts >= job.max_attempts
            if final and NotifyEvent.FAILED in events:
                raised.append((NotifyEvent.FAILED, None))
            if not final and NotifyEvent.RETRYING in events:
                raised.append((NotifyEvent.RETRYING, None))
        if (
            (outcome.succeeded or outcome.failed)
            and outcome.output
            and NotifyEvent.OUTPUT in events
        ):
            raised.append((NotifyEvent.OUTPUT, None))
        if outcome.succeeded and NotifyEvent.RECOVERED in events:
            raised.append((NotifyEvent.RECOVERED, self._recovered_check(job)))
        for name, check in raised:
            self._submit(
                _Item(self._event(name, job, outcome, duration, spec), spec.notify_targets, check)
            )

    def close(self, drain: float) -> None:
        """Send what is queued for at most ``drain`` seconds, then stop."""
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=max(drain, 0.01))
        self._thread.join(drain)

    # ------------------------------------------------------------------ internals
    def _recovered_check(self, job: Job) -> Callable[[], bool]:
        """In the sender thread: once this success is written (the finisher takes a few
        ms; up to ``RECORD_WAIT`` s), did the kind's job finished just before it fail? By
        (finished_at, id), so of several successes after a failure exactly one says so. A
        success after retries is not a recovery: no ``failed`` was announced for it."""
        previous = self._previous_outcome

        def check() -> bool:
            if previous is None:
                return False
            deadline = time.monotonic() + RECORD_WAIT
            while True:
                found = previous(job.id)
                if found.recorded:
                    return found.state == JobState.FAILED
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)

        return check

    def _event(self, name: str, job: Job, outcome: RunEnd, duration: float, spec: JobSpec) -> Event:
        output = outcome.output or ""
        return Event(
            event=name,
            job=job.kind,
            job_id=job.id,
            slot=job.scheduled_for,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
            exit_code=exit_code(outcome.error),
            duration=round(duration, 3),
            error=clean(outcome.error.splitlines()[0][:300]) if outcome.error else None,
            output_tail=clean(output[-OUTPUT_TAIL:]),
            host=self._host,
            user=spec.user,
        )

    def _submit(self, item: _Item) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            for target in item.targets:
                self._count.labels(target.kind, "dropped").inc()
            self._log(
                "notify-dropped",
                f"{item.event.event} of {item.event.job} (id {item.event.job_id}) not sent: "
                f"{QUEUE_SIZE} notifications already waiting",
            )

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                if item.check is not None and not item.check():
                    continue
            except Exception as exc:  # the database is away: say so, send nothing
                self._log("notify-failed", f"recovered check for {item.event.job}: {exc}")
                continue
            for target in item.targets:
                if target.kind == "mail" and target.value == LOCAL_USER and not self._local_mail:
                    continue  # no MAILTO and no MTA: cron discards it too
                try:
                    deliver(target, item.event, self._settings)
                except DeliveryError as exc:
                    self._count.labels(target.kind, "failed").inc()
                    self._log(
                        "notify-failed",
                        f"{item.event.event} of {item.event.job} (id {item.event.job_id}) to "
                        f"{target.kind}: {exc}",
                    )
                except Exception as exc:  # never let one delivery end the sender
                    self._count.labels(target.kind, "failed").inc()
                    self._log("notify-failed", f"{target.kind}: {type(exc).__name__}: {exc}")
                else:
                    self._count.labels(target.kind, "sent").inc()
