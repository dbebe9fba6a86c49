"""What the queue must show before a line is handed to it, and what is left in it after a
rollback: the two moments a switch can lose runs or run them twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from migrate_cron.errors import MigrateCronError
from migrate_cron.migration.line_switch import Refused
from migrate_cron.store.leases import SCHEDULER_LEASE
from migrate_cron.vocabulary import UNFINISHED_STATES, Mode

if TYPE_CHECKING:
    from migrate_cron.store import Store


def check_queue_ready(store: Store, name: str, to: str) -> bool:
    """Refuse to hand a job to a queue whose tables do not exist: every run would be lost.
    Returns whether the job goes to the scheduler while none leads (its slots then wait for
    one to start): worth a warning, not a refusal."""
    try:
        store.count_jobs(kind=name)
        if to != Mode.SCHEDULER:
            return False
        holder = store.lease_holder(SCHEDULER_LEASE)
        return holder is None or holder[1] < store.db_now()
    except MigrateCronError as exc:
        raise Refused(
            f"{exc}. The switched line would lose every run: fix this first (nothing was "
            "changed), or look at the change with --dry-run"
        ) from None


def still_queued(store: Store, name: str) -> int | None:
    """How many of the job's runs are queued or running: after a rollback cron runs the
    command again, so a worker would run these besides it. None when the queue cannot say."""
    try:
        return store.count_jobs(kind=name, states=UNFINISHED_STATES)
    except MigrateCronError:
        return None
