"""The worker's log: one line when a job starts and one when it finishes, on stderr.

Human lines read ``2026-01-01T02:30:00.012Z finish kind=export id=42 attempt=1/5
duration=0.153s outcome=done``; with ``--json-logs`` each line is a JSON object with the same
fields. Lines are written whole, so concurrent jobs never interleave mid-line. Worker events
(start, stop, database outages) go to the same stream. Error texts are masked for URL
passwords.

Job lines are gathered for up to ``delay`` (50 ms) and written together: at thousands of jobs
a second, a write per line costs more than the jobs (each is a syscall that hands the GIL
around). Worker events are written at once, and with everything still pending.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from migrate_cron.config import mask_url
from migrate_cron.logline import Stamps, format_line, quote
from migrate_cron.store.models import Job
from migrate_cron.worker.outcome import DONE, FAILED, LOST, RELEASE, Outcome


class WorkerLog:
    def __init__(
        self, stream: TextIO | None = None, *, json_lines: bool = False, delay: float = 0.05
    ) -> None:
        self._stream = stream
        self._json = json_lines
        self._delay = delay
        self._pending: list[str] = []
        self._lock = threading.Lock()  # guards _pending
        self._write_lock = threading.Lock()  # keeps batches in order on the stream
        self._kick = threading.Event()
        self._flusher: threading.Thread | None = None
        self._stamps = Stamps()
        #: ``quote`` of each kind seen (a regular expression match per line otherwise).
        self._kinds: dict[str, str] = {}

    def job_start(self, job: Job) -> None:
        if self._json:
            self._write("start", kind=job.kind, id=job.id, attempt=_attempt(job))
            return
        self._emit(
            f"{self._stamps.now()} start kind={self._kind(job.kind)} id={job.id} "
            f"attempt={_attempt(job)}"
        )

    def job_finish(self, job: Job, outcome: Outcome, duration: float) -> None:
        label = outcome_label(job, outcome)
        error = None
        if outcome.status == FAILED and outcome.error:
            error = mask_url(outcome.error.splitlines()[0][:300])
        if self._json:
            fields: dict[str, Any] = {
                "kind": job.kind,
                "id": job.id,
                "attempt": _attempt(job),
                "duration": round(duration, 6),
                "outcome": label,
            }
            if error is not None:
                fields["error"] = error
                if outcome.retry_in:
                    fields["retry_in"] = round(outcome.retry_in, 3)
            if outcome.note:
                fields["note"] = outcome.note
            self._write("finish", **fields)
            return
        line = (
            f"{self._stamps.now()} finish kind={self._kind(job.kind)} id={job.id} "
            f"attempt={_attempt(job)} "
            f"duration={duration:.3f}s outcome={label}"
        )
        if error is not None:
            line += f" error={quote(error)}"
            if outcome.retry_in:
                line += f" retry_in={outcome.retry_in:.3f}s"
        if outcome.note:
            line += f" note={quote(outcome.note)}"
        self._emit(line)

    def _kind(self, kind: str) -> str:
        quoted = self._kinds.get(kind)
        if quoted is None:
            quoted = self._kinds[kind] = quote(kind)
        return quoted

    def event(self, event: str, message: str, **fields: Any) -> None:
        """A worker event (start, stop, outage): written at once, after any pending job lines."""
        self._write(event, now=True, message=mask_url(message), **fields)

    def _write(self, event: str, *, now: bool = False, **fields: Any) -> None:
        self._emit(format_line(event, fields, json_lines=self._json), now=now)

    def _emit(self, line: str, *, now: bool = False) -> None:
        with self._lock:
            self._pending.append(line)
            first = len(self._pending) == 1
        if now or self._delay <= 0:
            self.flush()
        elif first:
            if self._flusher is None:
                self._start_flusher()
            self._kick.set()

    def flush(self) -> None:
        """Write every pending line now."""
        with self._write_lock:
            with self._lock:
                lines, self._pending = self._pending, []
            if not lines:
                return
            stream = self._stream or sys.stderr
            try:
                stream.write("\n".join(lines) + "\n")
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed stderr must not stop the jobs

    def _start_flusher(self) -> None:
        with self._lock:
            if self._flusher is not None:
                return
            self._flusher = threading.Thread(
                target=self._flush_loop, name="migrate-cron-log", daemon=True
            )
        self._flusher.start()

    def _flush_loop(self) -> None:
        while True:
            self._kick.wait()
            self._kick.clear()
            time.sleep(self._delay)
            self.flush()


def outcome_label(job: Job, outcome: Outcome) -> str:
    """done | retry | failed | released | lost (someone else owns the job now)."""
    if outcome.status == DONE:
        return "done"
    if outcome.status == RELEASE:
        return "released"
    if outcome.status == LOST:
        return "lost"
    if outcome.terminal or job.attempts >= job.max_attempts:
        return "failed"
    return "retry"


def _attempt(job: Job) -> str:
    return f"{job.attempts}/{job.max_attempts}"
