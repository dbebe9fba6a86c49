"""What running one job came to, before it is written to the database.

The worker writes outcomes in small batches (see ``finisher.py``); until then the job stays
``running`` under this worker's lease, so a crash before the write loses nothing: the lease
expires and the job runs again (at least once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from migrate_cron.notify.event import RunEnd
from migrate_cron.store.models import AttemptRun
from migrate_cron.vocabulary import RunStatus

DONE = RunStatus.DONE
FAILED = RunStatus.FAILED
RELEASE = RunStatus.RELEASE
LOST = RunStatus.LOST


@dataclass(frozen=True, slots=True)
class Outcome:
    status: RunStatus
    error: str | None = None
    output: str | None = None
    retry_in: float = 0.0
    terminal: bool = False
    #: Jobs to enqueue with this outcome, in its transaction: (kind, max_attempts) of the
    #: registry's ``on_success`` / ``on_failure`` (the latter once no retry is left).
    then: tuple[tuple[str, int], ...] = ()
    #: The process's exit code (None for handlers, timeouts and processes that never started).
    exit_code: int | None = None
    #: When the run itself began (wall clock, UTC) and how long it took (monotonic): what the
    #: attempts history and ``status`` durations report, not claim → outcome written.
    started_at: datetime | None = None
    duration: float | None = None
    #: Something the worker's log says with the outcome (the command ran in its
    #: ``cwd_fallback`` because its directory is missing).
    note: str | None = None

    @classmethod
    def done(cls, output: str | None = None, *, exit_code: int | None = None) -> Outcome:
        return cls(DONE, output=output, exit_code=exit_code)

    @classmethod
    def failed(
        cls,
        error: str,
        output: str | None = None,
        *,
        terminal: bool = False,
        exit_code: int | None = None,
    ) -> Outcome:
        return cls(FAILED, error=error, output=output, terminal=terminal, exit_code=exit_code)

    def timed(self, started_at: datetime, duration: float) -> Outcome:
        """This outcome with the run's start and duration: ``dataclasses.replace`` built the
        same copy at several times the cost, once per job."""
        return Outcome(
            self.status,
            self.error,
            self.output,
            self.retry_in,
            self.terminal,
            self.then,
            self.exit_code,
            started_at,
            duration,
            self.note,
        )

    @classmethod
    def release(cls) -> Outcome:
        return cls(RELEASE)

    @classmethod
    def lost(cls) -> Outcome:
        return cls(LOST)


def attempt_run(outcome: Outcome, ready_at: datetime | None = None) -> AttemptRun | None:
    """The attempts-history row of a finished run (None if the loop did not time it);
    ``ready_at``: the job's ``run_at`` when it was claimed (when its wait began)."""
    if outcome.started_at is None or outcome.duration is None:
        return None
    return AttemptRun(
        started_at=outcome.started_at,
        finished_at=outcome.started_at + timedelta(seconds=outcome.duration),
        exit_code=outcome.exit_code,
        error=outcome.error,
        output=outcome.output,
        ready_at=ready_at,
    )


def run_end(outcome: Outcome) -> RunEnd:
    """What the notifier is told of a finished run (it decides from this alone which events
    the run raises)."""
    return RunEnd(
        succeeded=outcome.status == DONE,
        failed=outcome.status == FAILED,
        terminal=outcome.terminal,
        error=outcome.error,
        output=outcome.output,
    )
