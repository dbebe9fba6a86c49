"""What running one job came to, before it is written to the database.

The worker writes outcomes in small batches (see ``finisher.py``); until then the job stays
``running`` under this worker's lease, so a crash before the write loses nothing: the lease
expires and the job runs again (at least once).
"""

from __future__ import annotations

from dataclasses import dataclass

DONE = "done"
FAILED = "failed"
RELEASE = "release"  # give the job back unrun/unfinished, attempt not counted (shutdown)
LOST = "lost"  # our lease was taken over: write nothing, the new owner decides


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    error: str | None = None
    output: str | None = None
    retry_in: float = 0.0
    terminal: bool = False
    #: Jobs to enqueue with this outcome, in its transaction: (kind, max_attempts) of the
    #: registry's ``on_success`` / ``on_failure`` (the latter once no retry is left).
    then: tuple[tuple[str, int], ...] = ()

    @classmethod
    def done(cls, output: str | None = None) -> Outcome:
        return cls(DONE, output=output)

    @classmethod
    def failed(cls, error: str, output: str | None = None, *, terminal: bool = False) -> Outcome:
        return cls(FAILED, error=error, output=output, terminal=terminal)

    @classmethod
    def release(cls) -> Outcome:
        return cls(RELEASE)

    @classmethod
    def lost(cls) -> Outcome:
        return cls(LOST)
