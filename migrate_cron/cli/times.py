"""Times as the scheduler commands take them (ISO options) and show them (a slot in its job's
zone and in UTC, in plain aligned columns)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from migrate_cron.scheduler.scheduler import ScheduledJob


def parse_time(text: str, option: str, tz: str = "UTC") -> datetime:
    """An ISO time given to ``option``, in ``tz`` when it has no offset, as UTC."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from migrate_cron.errors import UsageError

    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: use an ISO time like 2026-03-29T01:00 or 2026-03-29T01:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=ZoneInfo(tz))
    from datetime import UTC

    return when.astimezone(UTC)


def job_zones(jobs: Sequence[ScheduledJob]) -> list[tuple[ScheduledJob, str]]:
    """Each job with the zone its schedule reads times in."""
    return [(j, str(getattr(j.schedule, "tz", "UTC"))) for j in jobs]


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Plain aligned columns: readable in a terminal, greppable in a pipe, never truncated."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    for row in (header, *rows):
        typer.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def local_time(t: datetime, tz: str) -> str:
    """``t`` as a clock in ``tz`` shows it, with its offset."""
    from zoneinfo import ZoneInfo

    return t.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M %z")


def utc_time(t: datetime) -> str:
    """``t`` in UTC, to the minute."""
    from datetime import UTC

    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
