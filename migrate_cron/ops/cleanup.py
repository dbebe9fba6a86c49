"""Cleanup as a registry job of its own: a Python handler the worker runs on a schedule.

    [jobs.migrate-cron-cleanup]
    schedule = "17 3 * * *"
    handler = "migrate_cron.ops.cleanup:cleanup_job"
    mode = "scheduler"
    policy = "skip"
    timeout = 3600
    max_attempts = 3

It opens the queue database the worker itself uses (``MIGRATE_CRON_DATABASE_URL`` and
``MIGRATE_CRON_TABLE_PREFIX`` from the worker's environment), so no URL or password goes into
the registry file. Retention comes from the job's payload when it has one
(``{"done_older_than": "7d", "failed_older_than": "90d", "batch": 1000}``), the CLI defaults
otherwise. Deletes are committed chunk by chunk; when the worker shuts down mid-way the attempt
stops after the current chunk and a later run continues where it left off.
"""

from __future__ import annotations

import os
from typing import Any

from migrate_cron.config import DATABASE_URL_ENV, TABLE_PREFIX_ENV
from migrate_cron.ops.durations import parse_duration
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

DEFAULTS = {"done_older_than": "7d", "failed_older_than": "90d", "batch": 1000}
NEVER = ("never", "off", "none")


class CleanupStopped(Exception):
    """The worker is shutting down (or the timeout passed): stop between chunks."""


def retention_age(text: str, option: str) -> float | None:
    """Seconds from a retention like "7d"; None for "never" (keep that state forever)."""
    if text.strip().lower() in NEVER:
        return None
    seconds = parse_duration(text, option=option)
    if seconds <= 0:
        raise ValueError(f"{option}: must be longer than 0s (or 'never')")
    return seconds


def retention(payload: Any) -> tuple[float | None, float | None, int]:
    """(done age, failed age, batch) from a payload dict; ``"never"`` keeps a state."""
    options: dict[str, Any] = dict(DEFAULTS)
    if isinstance(payload, dict):
        unknown = set(payload) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown cleanup option(s) {sorted(unknown)}; use {sorted(DEFAULTS)}")
        options.update(payload)

    def age(key: str) -> float | None:
        return retention_age(str(options[key]), key)

    batch = int(options["batch"])
    if batch < 1:
        raise ValueError("batch: must be at least 1")
    return age("done_older_than"), age("failed_older_than"), batch


def cleanup_job(payload: Any, ctx: Any) -> str:
    """The handler: run ``Store.cleanup`` and return what it removed as the job's output."""
    from migrate_cron.store import open_store

    done_age, failed_age, batch = retention(payload)
    store = open_store(
        os.environ.get(DATABASE_URL_ENV, DEFAULT_DATABASE_URL),
        prefix=os.environ.get(TABLE_PREFIX_ENV, ""),
    )

    def between_chunks(_what: str, _n: int) -> None:
        if ctx is not None and ctx.should_stop():
            raise CleanupStopped("stopped between chunks: the worker is shutting down")

    try:
        result = store.cleanup(
            done_older_than=done_age,
            failed_older_than=failed_age,
            batch=batch,
            on_progress=between_chunks,
        )
    finally:
        store.dispose()
    return (
        f"removed {result.done} done, {result.failed} failed and {result.cancelled} cancelled "
        f"job(s), and {result.scheduled_runs} old scheduled_runs row(s)"
    )
