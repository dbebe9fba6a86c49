"""The checks of what the queue sees of the job: a failed run reaches it (``failures``: no
tail that forces success), and since the switch the job ran there (``queue``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from migrate_cron.errors import MigrateCronError
from migrate_cron.migration.check import FAIL, OK, SKIPPED, WAITING, Check, in_zone
from migrate_cron.registry import JobSpec
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.store.models import KindHistory


def failures_check(spec: JobSpec) -> Check:
    from migrate_cron.migration.swallow import find

    title = "a failed run reaches the queue"
    hidden = find(spec.command or "")
    if hidden.tail and (spec.mode == Mode.CRON or spec.migration is None):
        return Check(
            "failures",
            title,
            SKIPPED,
            f"not switched yet: the command ends in `{hidden.tail}`, which `migrate` removes "
            "from the registry's command (unless given --keep-swallow)",
            (),
            {"swallowed_by": hidden.tail},
        )
    if hidden.tail:
        return Check(
            "failures",
            title,
            FAIL,
            f"the command ends in `{hidden.tail}`: a failed run is recorded done, so the queue "
            "never retries it, never shelves it, and nobody hears of it",
            (
                f"remove the tail from `command` in [jobs.{spec.name}] (`migrate-cron migrate "
                f"{spec.name}` does it unless given --keep-swallow)",
            ),
            {"swallowed_by": hidden.tail},
        )
    details = (
        (
            f"its output goes to /dev/null ({', '.join(hidden.nulls)}): a failed attempt "
            "keeps no output to read",
        )
        if hidden.nulls
        else ()
    )
    return Check("failures", title, OK, "a non-zero exit fails the run", details)


def queue_check(spec: JobSpec, now: datetime, history: Callable[[datetime], KindHistory]) -> Check:
    title = "runs in the queue since the switch"
    if spec.mode == Mode.CRON or spec.migration is None:
        return Check("queue", title, SKIPPED, "not switched yet: cron still runs it")
    since = min(m.switched_at for m in spec.migrations)
    try:
        h = history(since)
    except MigrateCronError as exc:
        return Check("queue", title, FAIL, f"cannot read the queue: {exc}")
    data = {
        "since": since,
        "done": h.done,
        "failed": h.failed,
        "open": h.open,
        "running": h.running,
        "cancelled": h.cancelled,
        "retried": h.retried,
        "claimed": h.claimed,
        "last_success": h.last_success,
        "last_error": h.last_error,
    }
    counts = f"{h.done} done, {h.failed} failed, {h.open} open, {h.running} running" + (
        f", {h.retried} needed retries" if h.retried else ""
    )
    details: list[str] = []
    if h.last_success:
        details.append(f"last success: {h.last_success.isoformat(timespec='seconds')}")
    if h.last_error:
        first = h.last_error.strip().splitlines()[-1] if h.last_error.strip() else ""
        details.append(f"last error (job {h.last_error_job}): {first[:300]}")
    if h.failed:
        details.append(
            f"failed runs wait on the shelf: `migrate-cron jobs list --kind {spec.name} "
            "--state failed`, fix the cause, then `migrate-cron jobs retry --kind "
            f"{spec.name}`"
        )
        return Check("queue", title, FAIL, counts, tuple(details), data)
    if h.done:
        return Check("queue", title, OK, counts, tuple(details), data)
    due = _first_slot_after(spec, since)
    if due is None or due > now:
        when = in_zone(due, spec.timezone) if due else "unknown"
        details.append(
            f"no slot since the switch yet; the first is at {when}: verify again after it"
        )
        return Check("queue", title, WAITING, counts, tuple(details), data)
    if h.total:
        details.append("enqueued but not done yet: is a worker running? (`migrate-cron worker`)")
    else:
        details.append(
            f"a slot was due at {in_zone(due, spec.timezone)} but nothing was enqueued: "
            "is the switched crontab installed, and does cron run it? (look at cron's log "
            "and mail)"
        )
    return Check("queue", title, FAIL, counts, tuple(details), data)


def _first_slot_after(spec: JobSpec, since: datetime) -> datetime | None:
    if not spec.schedule:
        return None
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    try:
        return Schedule.parse(spec.schedule, spec.timezone).next_after(since)
    except ScheduleError:
        return None
