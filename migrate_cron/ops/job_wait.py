"""Waiting for one job to finish (``jobs run --wait``): a worker runs it, the queue's row says
when it did; nothing here runs it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from migrate_cron.vocabulary import UNFINISHED_STATES

if TYPE_CHECKING:
    from migrate_cron.store import Store
    from migrate_cron.store.models import Job

#: Seconds between two reads of the job's row.
POLL = 0.2


def wait_finished(store: Store, job_id: int, timeout: float | None) -> Job | None:
    """The job once it is finished; as it still is when ``timeout`` seconds have passed
    first; None if its row is gone."""
    deadline = None if timeout is None else time.monotonic() + timeout
    job = store.get(job_id)
    while job is not None and job.state in UNFINISHED_STATES:
        if deadline is not None and time.monotonic() > deadline:
            return job
        time.sleep(POLL)
        job = store.get(job_id)
    return job
