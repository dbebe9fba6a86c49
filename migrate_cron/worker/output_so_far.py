"""What a running command has printed so far, for the heartbeat to store on the job row.

Without it a job's ``output`` appears only when the run ends, and an operator watching an
hour-long run sees nothing. The runner thread feeds the tails (``runner.Tail``); the heartbeat
thread reads them — the same bounded tails the finish stores, so a write is never larger than
the finish's — and writes only when something new was printed since the last write that
reached the database (a write lost to an outage is sent again at the next heartbeat).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from migrate_cron.worker.runner import Tail


def combine(stdout: str, stderr: str) -> str:
    """Both streams in one text, stderr after a marker line (as the finish stores them)."""
    if not stderr:
        return stdout
    if not stdout:
        return stderr
    sep = "" if stdout.endswith("\n") else "\n"
    return f"{stdout}{sep}[stderr]\n{stderr}"


class OutputSoFar:
    """One run's live output: watched by the runner, taken and confirmed by the heartbeat."""

    __slots__ = ("_lock", "_streams", "_taken", "_written")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: tuple[Tail, Tail] | None = None
        self._written = 0  # bytes printed when the last write reached the database
        self._taken = 0  # bytes printed when ``take`` last read the tails

    def watch(self, out: Tail, err: Tail) -> None:
        with self._lock:
            self._streams = (out, err)

    def take(self) -> str | None:
        """The output so far if more was printed since the last confirmed write, else None."""
        with self._lock:
            if self._streams is None:
                return None
            out, err = self._streams
            total = out.total + err.total
            if total == self._written:
                return None
            self._taken = total
            return combine(out.text(), err.text())

    def confirm(self) -> None:
        """What ``take`` returned is in the database."""
        with self._lock:
            self._written = self._taken
