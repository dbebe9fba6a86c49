"""Where a legacy command runs when its directory is missing: what its cron did.

cron runs a line in the job's HOME (the crontab's ``HOME=``, else the passwd home). When that
directory does not exist the crons part ways (docs/cron-flavours.md, rule 12): Debian's cron
ignores the failed ``chdir`` and the command runs in the daemon's own directory,
``/var/spool/cron``; busybox crond falls back to the same directory; cronie does not run the
command at all. A registry entry carries which with ``cwd_fallback`` (``generate registry``
writes the flavour's directory, none for cronie), and the check is made at every run: a home
can vanish after ``generate`` saw it, or appear after ``generate`` missed it.

A run that cannot start for this reason is a failure of the host's setup, not of the attempt:
the caller fails it at once, without retries (cron does not retry either; the next slot is a
new job and tries again), and the error names the directory and the way out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Workdir:
    """``path``: where the command runs, None when it must not run; ``note``: why it is not
    the wanted directory (the fallback was taken), or why nothing runs."""

    path: str | None
    note: str | None = None


def choose(wanted: str, fallback: str | None, *, what: str, job_id: int) -> Workdir:
    """The directory to run in: ``wanted`` when it exists, else ``fallback`` when that exists,
    else none. ``what`` names where ``wanted`` came from ("cwd", "HOME") for the messages."""
    if os.path.isdir(wanted):
        return Workdir(wanted)
    if fallback is not None and os.path.isdir(fallback):
        return Workdir(
            fallback, f"{wanted} ({what}) does not exist: ran in {fallback} (cwd_fallback)"
        )
    retry = f"then `migrate-cron jobs retry {job_id}`"
    if fallback is not None:
        return Workdir(
            None,
            f"not run: neither its directory {wanted} ({what}) nor its cwd_fallback {fallback} "
            f"exists on this host; not retried: create one of them, {retry}",
        )
    return Workdir(
        None,
        f"not run: its directory {wanted} ({what}) does not exist on this host and the entry "
        "has no cwd_fallback (cronie does not run such a job either); not retried: create the "
        f"directory or set cwd_fallback, {retry}",
    )
