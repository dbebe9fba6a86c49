"""A per-job stop request: the worker is shutting down, or another worker now owns the job."""

from __future__ import annotations

import threading

SHUTDOWN = "shutdown"
LEASE_LOST = "lease lost"


class Cancel:
    """Set once; ``hard`` asks for an immediate SIGKILL instead of SIGTERM then SIGKILL.

    Commands are stopped by the runner (the whole process group is signalled). Python handlers
    cannot be killed from outside their thread: they see ``context.cancelled`` and should return.
    """

    __slots__ = ("event", "hard", "reason")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason: str | None = None
        self.hard = False

    def set(self, reason: str, *, hard: bool = False) -> None:
        if self.reason is None:
            self.reason = reason
        self.hard = self.hard or hard
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self.event.wait(timeout)
