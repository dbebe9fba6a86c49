"""A per-job stop request: the worker is shutting down, or another worker now owns the job."""

from __future__ import annotations

SHUTDOWN = "shutdown"
LEASE_LOST = "lease lost"


class Cancel:
    """Set once (the first reason wins); ``hard`` asks for SIGKILL at once instead of SIGTERM,
    then SIGKILL.

    Commands are stopped by the runner, which looks at this flag while it waits on the process.
    Python handlers cannot be killed from outside their thread: they see it as
    ``context.cancelled.is_set()`` (or ``context.should_stop()``) and should return.
    Plain attributes, no Event: one is made per job, and nothing blocks on it.
    """

    __slots__ = ("_set", "hard", "reason")

    def __init__(self) -> None:
        self._set = False
        self.reason: str | None = None
        self.hard = False

    def set(self, reason: str, *, hard: bool = False) -> None:
        if self.reason is None:
            self.reason = reason
        self.hard = self.hard or hard
        self._set = True

    def is_set(self) -> bool:
        return self._set
