"""The worker's log: one line when a job starts and one when it finishes, on stderr.

Human lines read ``2026-01-01T02:30:00.012Z finish kind=export id=42 attempt=1/5
duration=0.153s outcome=done``; with ``--json-logs`` each line is a JSON object with the same
fields. Lines are written whole under a lock, so concurrent jobs never interleave mid-line.
Worker events (start, stop, database outages) go to the same stream. Error texts are masked
for URL passwords.
"""

from __future__ import annotations

import json
import re
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
        if self._json:
            self._write("start", kind=job.kind, id=job.id, attempt=_attempt(job))
            return
        self._emit(f"{_ts()} start kind={_q(job.kind)} id={job.id} attempt={_attempt(job)}")

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
            self._write("finish", **fields)
            return
        line = (
            f"{_ts()} finish kind={_q(job.kind)} id={job.id} attempt={_attempt(job)} "
            f"duration={duration:.3f}s outcome={label}"
        )
        if error is not None:
            line += f" error={_q(error)}"
            if outcome.retry_in:
                line += f" retry_in={outcome.retry_in:.3f}s"
        self._emit(line)

    def event(self, event: str, message: str, **fields: Any) -> None:
        self._write(event, message=mask_url(message), **fields)

    def _write(self, event: str, **fields: Any) -> None:
        if self._json:
            self._emit(json.dumps({"ts": _ts(), "event": event, **fields}, default=str))
            return
        message = fields.pop("message", None)
        parts = [_ts(), event]
        if message:
            parts.append(message)
        parts.extend(f"{k}={_q(str(v))}" for k, v in fields.items())
        self._emit(" ".join(parts))

    def _emit(self, line: str) -> None:
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


def _ts() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _attempt(job: Job) -> str:
    return f"{job.attempts}/{job.max_attempts}"


_PLAIN = re.compile(r"[^\s\"=]+")


def _q(text: str) -> str:
    """A value as is when it has no space, quote or '='; else JSON-quoted."""
    return text if _PLAIN.fullmatch(text) else json.dumps(text, ensure_ascii=False)
