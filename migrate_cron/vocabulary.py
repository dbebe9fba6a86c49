"""Words with one meaning across the project, defined once: the states, outcomes, modes,
policies and events that the registry, the database and the worker exchange as text.

StrEnums, so a value read from a registry file or a database row compares equal to its member
and prints (and is stored) as itself. Nowhere else spells one of these values:
``tests/architecture/test_vocabulary.py`` fails on a raw one compared, passed or stored outside
this module. Analysis rule ids live with the rules that define them.
"""

from __future__ import annotations

from enum import StrEnum


class Word(StrEnum):
    """A StrEnum whose ``repr`` is its value's, as the plain string it replaces printed: a
    message that quotes a value (``mode {spec.mode!r}``) reads the same whether the value
    came as text or as a member."""

    def __repr__(self) -> str:
        return repr(self.value)


class Policy(Word):
    """What the scheduler does with the slots a job missed while nothing was scheduling."""

    SKIP = "skip"
    RUN_ONCE = "run-once"
    BACKFILL = "backfill"


class Mode(Word):
    """Who fires a registry job's slots: cron itself (not switched), cron running
    ``migrate-cron enqueue`` (``enqueue``), or the scheduler service (``scheduler``)."""

    CRON = "cron"
    ENQUEUE = "enqueue"
    SCHEDULER = "scheduler"


class Overlap(Word):
    """A registry job's ``overlap``: what a slot due while a run of the job is still running
    becomes. Either promises the job never runs twice at once."""

    #: Recorded as skipped, no job (``flock -n``).
    SKIP = "skip"
    #: Enqueued, to run once the running one has finished.
    WAIT = "wait"


class JobState(Word):
    """The states of a job row (stored as their text value; a CHECK constraint lists them).

    open → running (claimed) → done | open again (retry after backoff) | failed (out of
    attempts, last error kept); cancelled by an operator.
    """

    OPEN = "open"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Finished: the job does not run again (a failed one only if an operator retries it).
FINISHED_STATES = (JobState.DONE, JobState.FAILED)
#: Not yet finished: a worker still runs it or will (what a rollback and ``run --wait`` wait for).
UNFINISHED_STATES = (JobState.OPEN, JobState.RUNNING)
#: What an operator's retry by job id puts back to open (by kind or all: failed only).
RETRYABLE_STATES = (JobState.FAILED, JobState.CANCELLED)
#: What an operator's cancel acts on: what has not finished, and failed jobs (cancelling one
#: acknowledges it: it no longer counts as failed).
CANCELLABLE_STATES = (JobState.OPEN, JobState.RUNNING, JobState.FAILED)
#: Where a run that did not succeed leaves its job: open again (an attempt is left) or failed
#: (none is), whether its worker wrote the failure or the reaper took the lease back.
AFTER_FAILURE_STATES = (JobState.OPEN, JobState.FAILED)


class SlotOutcome(Word):
    """What became of one scheduled slot (``scheduled_runs.outcome``)."""

    #: A job was enqueued for it.
    ENQUEUED = "enqueued"
    #: Recorded without a job: ``overlap = "skip"`` and a run of the job was still running, or
    #: the missed-run policy passed over it.
    SKIPPED = "skipped"


class AttemptOutcome(Word):
    """How one finished run ended (``job_attempts.outcome``)."""

    DONE = "done"
    FAILED = "failed"


class EffectStatus(Word):
    """The states of a ``side_effects`` row (the ledger of ``migrate-cron once``).

    attempted (recorded *before* the effect runs) → done | failed. A key left ``attempted``
    means a run started and never said how it ended: the effect may or may not have happened,
    so nothing runs it again until a person checks and forgets the key (or retries it).
    """

    ATTEMPTED = "attempted"
    DONE = "done"
    FAILED = "failed"


class RunStatus(Word):
    """What running one job came to in the worker, before it is written to the database."""

    DONE = "done"
    FAILED = "failed"
    #: Give the job back unrun/unfinished, attempt not counted (shutdown).
    RELEASE = "release"
    #: Our lease was taken over: write nothing, the new owner decides.
    LOST = "lost"


class NotifyEvent(Word):
    """What a job's notification is sent on (the registry's ``notify_on``)."""

    #: The final attempt failed.
    FAILED = "failed"
    #: An attempt failed and a retry is left.
    RETRYING = "retrying"
    #: A finished run printed something (cron's MAILTO mailed it).
    OUTPUT = "output"
    #: A run succeeded after the job's previous run had failed.
    RECOVERED = "recovered"


#: Notified when the registry names no events: the final failure only.
DEFAULT_NOTIFY_EVENTS = (NotifyEvent.FAILED,)


class QueueCount(Word):
    """What ``status`` and the metrics count per kind: the job states, with ``open`` split
    into ``ready`` (due now) and ``scheduled`` (``run_at`` in the future).

    "Ready" was spelled as three lists of states with different members, and they do mean
    different things: ``done`` is counted only within the window (jobs finished since its
    start), every other state whatever the rows' age (a failed job needs a person until it is
    handled). So the store reads the states counted whole (``COUNTED_STATES``) and the done
    ones apart; the metrics' jobs gauge shows the counts that do not depend on a window
    (``LIVE_COUNTS``); ``status``'s totals add up all of them (``ALL_COUNTS``).
    """

    READY = "ready"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The job states counted whole, whatever the rows' age; done is counted within the window.
COUNTED_STATES = (JobState.OPEN, JobState.RUNNING, JobState.FAILED, JobState.CANCELLED)
#: The counts that do not depend on the window: the metrics' jobs gauge, one per count.
LIVE_COUNTS = tuple(c for c in QueueCount if c is not QueueCount.DONE)
#: Every count of a kind, done within the window included: ``status``'s totals.
ALL_COUNTS = tuple(QueueCount)


class Tally(Word):
    """What ``job_tallies`` counts per kind and hour: what the queue did that no other table
    keeps, so the console can say what the switch from cron has bought."""

    #: Another host fired a slot already recorded: made one (cron would have run it twice).
    DUPLICATE_FIRE = "duplicate-fire"
    #: A slot due while a run of the job still ran, held back by ``overlap``.
    OVERLAP_HELD = "overlap-held"
    #: A slot missed while the scheduler was down, run late by the policy.
    MISSED_RUN = "missed-run"
    #: A slot missed while the scheduler was down, passed over by the policy.
    MISSED_SKIPPED = "missed-skipped"


class Action(Word):
    """What an operator did (``job_actions.action``), from the console or the CLI."""

    #: Named jobs back to open (``jobs retry IDS``, the Retry button).
    RETRY = "retry"
    #: Every failed job of a kind (or of all kinds) back to open (``jobs retry --kind``).
    RETRY_FAILED = "retry-failed"
    CANCEL = "cancel"
    #: A new job of a kind, due at once, outside its schedule (``jobs run``).
    RUN_NOW = "run-now"
    PAUSE = "pause"
    RESUME = "resume"


class WorkerState(Word):
    """What the Workers page says of a worker process (``job_workers``)."""

    #: Heartbeated recently.
    ALIVE = "alive"
    #: Said goodbye: a graceful stop wrote ``stopped_at``.
    STOPPED = "stopped"
    #: Neither: it stopped heartbeating without a goodbye (killed, host down, cut off).
    GONE = "gone"
