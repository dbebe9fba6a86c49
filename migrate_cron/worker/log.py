"""The worker's log: one line when a job starts and one when it finishes, on stderr.

Human lines read ``2026-01-01T02:30:00.012Z finish kind=export id=42 attempt=1/5
duration=0.153s outcome=done``; with ``--json-logs`` each line is a JSON object with the same
fields. Lines are written whole under a lock, so concurrent jobs never interleave mid-line.
Worker events (start, stop, database outages) go to the same stream. Error texts are masked
for URL passwords.
"""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

from migrate_cron.config import mask_url
from migrate_cron.store.models import Job
from migrate_cron.worker.outcome import DONE, FAILED, LOST, RELEASE, Outcome


class WorkerLog:
    def __init__(self, stream: TextIO | None = None, *, json_lines: bool = False) -> None:
        self._stream = stream
        self._json = json_lines
        self._lock = threading.Lock()

    def job_start(self, job: Job) -> None:
        self._write("start", kind=job.kind, id=job.id, attempt=f"{job.attempts}/{job.max_attempts}")

    def job_finish(self, job: Job, outcome: Outcome, duration: float) -> None:
        fields: dict[str, Any] = {
            "kind": job.kind,
            "id": job.id,
            "attempt": f"{job.attempts}/{job.max_attempts}",
            "duration": round(duration, 6),
            "outcome": outcome_label(job, outcome),
        }
        if outcome.status == FAILED and outcome.error:
            fields["error"] = mask_url(outcome.error.splitlines()[0][:300])
            if outcome.retry_in:
                fields["retry_in"] = round(outcome.retry_in, 3)
        self._write("finish", **fields)

    def event(self, event: str, message: str, **fields: Any) -> None:
        self._write(event, message=mask_url(message), **fields)

    def _write(self, event: str, **fields: Any) -> None:
        ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if self._json:
            line = json.dumps({"ts": ts, "event": event, **fields}, default=str)
        else:
            message = fields.pop("message", None)
            parts = [ts, event]
            if message:
                parts.append(message)
            parts.extend(f"{k}={_human(k, v)}" for k, v in fields.items())
            line = " ".join(parts)
        stream = self._stream or sys.stderr
        with self._lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed stderr must not stop the jobs


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


def _human(key: str, value: Any) -> str:
    if key == "duration":
        return f"{value:.3f}s"
    if key == "retry_in":
        return f"{value:.3f}s"
    text = str(value)
    if not text or any(c in text for c in ' "=\n\t'):
        return json.dumps(text)
    return text
