"""A job's page as a story: what the worker runs, every run numbered as it happened, and —
while it runs or waits to retry — what is going on now.

The registry says how a command runs (shell, user, directory, the names of its environment);
never an environment value, and no password of a URL written in the command: a page is read
by more people than the registry. Runs are numbered by their place in the history: the stored
``attempt`` counts within one round and starts again at 1 when an operator retries a failed
job, so two runs both stored as attempt 1 are runs 1 and 2, the second opening round 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from migrate_cron.config import mask_url
from migrate_cron.vocabulary import JobState

if TYPE_CHECKING:
    from migrate_cron.registry import JobSpec
    from migrate_cron.store.models import Attempt, Job

#: The job's data the worker hands a command, by name (values are the job row's, shown above).
DATA_NAMES = (
    "MIGRATE_CRON_JOB_ID",
    "MIGRATE_CRON_KIND",
    "MIGRATE_CRON_ATTEMPT",
    "MIGRATE_CRON_SCHEDULED_FOR",
    "MIGRATE_CRON_PAYLOAD",
)
#: ``NAME=value`` in a command line where the name says secret (PGPASSWORD=…, API_TOKEN=…).
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)\b(?P<name>[A-Z0-9_]*(?:PASS|PWD|SECRET|TOKEN|API_?KEY|CREDENTIAL)[A-Z0-9_]*)"
    r"=(?P<value>'[^']*'|\"[^\"]*\"|\S+)"
)


def masked(command: str) -> str:
    """``command`` with URL passwords and secret-named assignments replaced by ``***``."""
    return _SECRET_ASSIGNMENT.sub(lambda m: f"{m.group('name')}=***", mask_url(command))


@dataclass(frozen=True)
class CommandView:
    """How the worker runs a registry entry: ``shell -c command`` as ``user`` in ``cwd``."""

    shell: str
    command: str | None
    handler: str | None
    #: None: the worker's own user.
    user: str | None
    #: None: the user's HOME (as cron runs a line).
    cwd: str | None
    cwd_fallback: str | None
    env_names: list[str]
    stdin: bool
    timeout: float | None
    data_names: tuple[str, ...] = DATA_NAMES


def command_view(spec: JobSpec | None) -> CommandView | None:
    if spec is None:
        return None
    return CommandView(
        shell=spec.shell,
        command=masked(spec.command) if spec.command is not None else None,
        handler=spec.handler,
        user=spec.user,
        cwd=spec.cwd,
        cwd_fallback=spec.cwd_fallback,
        env_names=sorted(spec.env),
        stdin=bool(spec.stdin),
        timeout=spec.timeout,
    )


@dataclass(frozen=True)
class Run:
    """One recorded run: its place in the history (1 = the first ever), the round it belongs
    to (1 + the operator retries before it) and whether an operator retry started it."""

    number: int
    round: int
    retried_by_operator: bool
    attempt: Attempt


def numbered(history: list[Attempt]) -> list[Run]:
    """Number runs by position; a stored attempt no higher than the one before means the
    counter was reset in between (``jobs retry`` / the console's Retry), a new round."""
    runs: list[Run] = []
    round_ = 1
    for i, a in enumerate(history):
        reset = i > 0 and a.attempt <= history[i - 1].attempt
        round_ += reset
        runs.append(Run(i + 1, round_, reset, a))
    return runs


@dataclass(frozen=True)
class Running:
    """A run in progress, by the database's clock (the same clock ``started_at`` is in)."""

    worker: str | None
    elapsed: float | None
    #: Seconds its lease still runs; negative: the worker stopped heartbeating.
    lease_left: float | None
    #: What the command printed so far (stored at the worker's heartbeat).
    output: str | None


@dataclass(frozen=True)
class NextRetry:
    """An open job whose last attempt failed: when it runs again and why it waits."""

    at: datetime
    #: Seconds until then (0 or less: due now, waiting for a worker).
    wait: float
    error: str | None
    #: The attempts made in this round and how many it may make.
    attempt: int
    max_attempts: int
    #: The longest wait the backoff could have drawn after this attempt, None without a
    #: registry entry (a decorated @handler keeps its backoff in its code).
    ceiling: float | None
    base: float | None
    cap: float | None


def running(job: Job, now: datetime) -> Running | None:
    if job.state != JobState.RUNNING:
        return None
    elapsed = (now - job.started_at).total_seconds() if job.started_at else None
    left = (job.locked_until - now).total_seconds() if job.locked_until else None
    return Running(job.locked_by, elapsed, left, job.output)


def next_retry(job: Job, spec: JobSpec | None, now: datetime) -> NextRetry | None:
    """For an open job with a failed attempt behind it; the worker's backoff is full jitter:
    a random wait in [0, min(cap, base x 2^attempts)] (``worker/backoff.py``)."""
    if job.state != JobState.OPEN or not job.attempts or not job.last_error:
        return None
    base = cap = ceiling = None
    if spec is not None:
        base, cap = spec.backoff.base, spec.backoff.cap
        ceiling = min(cap, base * 2.0 ** min(job.attempts, 60))
    return NextRetry(
        at=job.run_at,
        wait=(job.run_at - now).total_seconds(),
        error=job.last_error,
        attempt=job.attempts,
        max_attempts=job.max_attempts,
        ceiling=ceiling,
        base=base,
        cap=cap,
    )
