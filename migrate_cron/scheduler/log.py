"""The scheduler's log on stderr: one line per enqueued slot, one summary line per batch of
skipped slots, and process events (leading, standby, outages, stop).

Human lines read ``2026-01-01T02:30:00.012Z enqueue job=export slot=2026-01-01T02:30:00Z
reason=on-time id=42``; with ``--json-logs`` each line is a JSON object with the same fields.
Slots skipped over ``max_backfill`` are reported with the command that runs one by hand.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from migrate_cron.config import mask_url
from migrate_cron.logline import format_line
from migrate_cron.scheduler.policy import ENQUEUE, OVER_CAP
from migrate_cron.scheduler.scheduler import RunEvent

#: Enqueue lines per job and tick before the rest is summarised (a backfill can be long).
MAX_LINES_PER_JOB = 20
#: Events still logged when quiet.
PROBLEMS = frozenset({"outage", "registry-error"})


def iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


class SchedulerLog:
    def __init__(
        self, stream: TextIO | None = None, *, json_lines: bool = False, quiet: bool = False
    ) -> None:
        self._stream = stream
        self._json = json_lines
        self._quiet = quiet  # only problems (``scheduler --once`` from cron: cron mails output)
        self._lock = threading.Lock()

    def event(self, event: str, message: str = "", **fields: Any) -> None:
        if self._quiet and event not in PROBLEMS:
            return
        self._write(event, message=mask_url(message), **fields)

    def runs(self, events: Sequence[RunEvent]) -> None:
        """Log what a tick did, grouped per job, oldest slot first."""
        if self._quiet:
            return
        by_job: dict[str, list[RunEvent]] = {}
        for e in events:
            by_job.setdefault(e.job, []).append(e)
        for job, items in by_job.items():
            self._job_runs(job, items)

    def _job_runs(self, job: str, items: list[RunEvent]) -> None:
        enqueued = [e for e in items if e.created and e.action == ENQUEUE]
        for e in enqueued[:MAX_LINES_PER_JOB]:
            self._write("enqueue", job=job, slot=iso(e.slot), reason=e.reason, id=e.job_id)
        if len(enqueued) > MAX_LINES_PER_JOB:
            rest = enqueued[MAX_LINES_PER_JOB:]
            self._write(
                "enqueue",
                job=job,
                count=len(rest),
                first=iso(rest[0].slot),
                last=iso(rest[-1].slot),
                message="more slots enqueued",
            )
        skipped = [e for e in items if e.created and e.action != ENQUEUE]
        for reason in sorted({e.reason for e in skipped}):
            group = [e for e in skipped if e.reason == reason]
            fields: dict[str, Any] = {
                "job": job,
                "count": len(group),
                "first": iso(group[0].slot),
                "last": iso(group[-1].slot),
                "reason": reason,
            }
            if reason == OVER_CAP:
                fields["message"] = (
                    "missed slots over max_backfill recorded as skipped; run one by hand with "
                    f"`migrate-cron enqueue {job} --slot ISO`"
                )
            self._write("skip", **fields)
        already = [e for e in items if not e.created]
        if already:
            self._write(
                "already",
                job=job,
                count=len(already),
                message="slots recorded by another scheduler or enqueue call",
            )

    def _write(self, event: str, **fields: Any) -> None:
        fields = {k: v for k, v in fields.items() if v is not None and v != ""}
        line = format_line(event, fields, json_lines=self._json)
        stream = self._stream or sys.stderr
        with self._lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed stderr must not stop the scheduler
