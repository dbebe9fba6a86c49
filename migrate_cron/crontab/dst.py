"""What the day rule and DST do to a schedule, in words (``explain``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from migrate_cron.crontab.timezone import dst_windows, zone


def day_rule_notes(schedule: Any) -> list[str]:
    """Say which day rule cron applies when both day fields are restricted."""
    if schedule.is_reboot:
        return []
    f = schedule.fields
    if len(f.days) == 31 or len(f.weekdays) == 7:
        return []
    if f.day_or:
        return ["both day fields are set: cron runs on either one (day of month OR day of week)"]
    return [
        "a day field starts with '*', so cron needs both to match (day of month AND day of "
        "week); without the '*' it would be OR"
    ]


def dst_notes(schedule: Any, when: datetime) -> list[str]:
    """What DST does to this schedule in the coming year (fixed-time jobs only)."""
    from datetime import timedelta

    if schedule.is_reboot or not schedule.fixed_time:
        return []
    notes: list[str] = []
    start = when.astimezone(UTC).replace(tzinfo=None)
    for window in dst_windows(schedule.tz, start.year):
        transition, low, high = window.transition, window.low, window.high
        if transition.at < start or transition.at > start + timedelta(days=366):
            continue
        local_day = low.date()
        fires = list(
            schedule.iter_between(
                (transition.at - timedelta(hours=3)).replace(tzinfo=UTC),
                (transition.at + timedelta(hours=3)).replace(tzinfo=UTC),
            )
        )
        hits = [
            t
            for t in fires
            if low <= (t.astimezone(zone(schedule.tz)).replace(tzinfo=None)) < high
            or t.replace(tzinfo=None) == transition.at
        ]
        if not hits:
            continue
        if window.forward:
            notes.append(
                f"{local_day}: {window.span} does not exist (clocks go forward); cron runs the "
                f"skipped time right after the jump, at {high.strftime('%H:%M')}"
            )
        else:
            notes.append(
                f"{local_day}: {window.span} happens twice (clocks go back); cron runs it only "
                "the first time"
            )
    return notes
