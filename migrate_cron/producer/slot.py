"""Which slot a run is for, from ``--slot auto|ISO``.

Cron starts a command a few seconds late (and a busy host later still): ``auto`` takes the
job's latest slot at or before now, so a late start still lands on its own slot and every host
that fires the same minute names the same slot. An explicit time must be a slot of the job's
schedule, so a typo cannot create a second identity for a run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from migrate_cron.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from migrate_cron.crontab.schedule import Schedule
    from migrate_cron.registry import JobSpec


def resolve_slot(spec: JobSpec, slot: str, now: datetime) -> datetime:
    """The aware UTC slot for ``--slot`` (``auto`` or ISO) at ``now``."""
    schedule = _schedule(spec)
    if slot == "auto":
        if schedule is None:
            return now.astimezone(UTC).replace(second=0, microsecond=0)
        latest = schedule.latest_at_or_before(now)
        if latest is None:
            raise UsageError(
                f"job {spec.name!r}: schedule {spec.schedule!r} has no slot in the last four "
                "years; pass --slot ISO"
            )
        return latest
    when = _parse_iso(slot, spec.timezone)
    if schedule is not None and schedule.latest_at_or_before(when) != when:
        before = schedule.latest_at_or_before(when)
        after = schedule.next_after(when)
        near = ", ".join(_local(t, spec.timezone) for t in (before, after) if t is not None)
        raise UsageError(
            f"--slot {slot}: not a slot of job {spec.name!r} ({spec.schedule!r} in "
            f"{spec.timezone}); the nearest slots are {near}"
        )
    return when


def _schedule(spec: JobSpec) -> Schedule | None:
    if not spec.schedule:
        return None
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    try:
        return Schedule.parse(spec.schedule, spec.timezone)
    except ScheduleError as exc:
        raise ConfigError(f"job {spec.name!r}: schedule {spec.schedule!r}: {exc}") from None


def _parse_iso(text: str, tz: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--slot {text!r}: use `auto` or an ISO time like 2026-03-29T02:30 or "
            "2026-03-29T00:30:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=ZoneInfo(tz))
    return when.astimezone(UTC)


def _local(t: datetime, tz: str) -> str:
    return t.astimezone(ZoneInfo(tz)).isoformat()
