"""The check that cron and migrate-cron fire the job at the same minutes (``slots``).

Cron's side is the original line read in its file's context (CRON_TZ and env lines above it,
the switched line put back); migrate-cron's is the registry's schedule in its zone, mapped by
``--slot auto`` in enqueue mode. Every difference over the next days is listed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.migration.check import FAIL, MAX_LISTED, OK, SKIPPED, Check, Origin, in_zone
from migrate_cron.migration.crontab_file import CrontabText
from migrate_cron.registry import JobSpec
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.crontab.entry import CrontabFile, CrontabLine


def slots_check(
    spec: JobSpec,
    origin: Origin,
    read: Callable[[Path, bytes | None], CrontabFile],
    zone: str,
    now: datetime,
    days: int,
    several: bool = False,
) -> Check:
    title = f"same slots as cron (next {days} days)"
    if origin.source is not None and several:
        title += f" — {origin.source.label}"
    if origin.source is None or not spec.schedule:
        return Check("slots", title, SKIPPED, "the job has no crontab line or no schedule")
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    details: list[str] = []
    line = _original_line(spec, origin, read, details)
    if line is None:
        return Check(
            "slots", title, FAIL, details[0] if details else "line not found", tuple(details[1:])
        )
    cron_zone = line.timezone or zone
    try:
        cron = Schedule.parse(line.schedule or "", cron_zone)
        ours = Schedule.parse(spec.schedule, spec.timezone)
    except ScheduleError as exc:
        return Check("slots", title, FAIL, f"cannot compare: {exc}")
    end = now + timedelta(days=days)
    fired = list(cron.iter_between(now, end))
    mode = spec.mode if origin.migration is not None else "cron"
    produced = _produced(mode, fired, ours, now, end)
    missing = sorted(set(fired) - set(produced))
    extra = sorted(set(produced) - set(fired))
    data = {
        "origin": origin.source.label,
        "switched": origin.migration is not None,
        "cron": {"schedule": line.schedule, "timezone": cron_zone, "slots": len(fired)},
        "migrate_cron": {
            "schedule": spec.schedule,
            "timezone": spec.timezone,
            "slots": len(set(produced)),
        },
        "missing": missing[:MAX_LISTED],
        "extra": extra[:MAX_LISTED],
    }
    if not missing and not extra:
        summary = (
            f"identical: {len(fired)} slots ({line.schedule!r} in {cron_zone} = "
            f"{spec.schedule!r} in {spec.timezone})"
        )
        return Check("slots", title, OK, summary, tuple(details), data)
    for t in missing[:MAX_LISTED]:
        details.append(f"cron fires at {in_zone(t, cron_zone)}, migrate-cron has no such slot")
    for t in extra[:MAX_LISTED]:
        details.append(
            f"migrate-cron has a slot at {in_zone(t, spec.timezone)}, cron does not fire"
        )
    details.append(
        "fix the registry's schedule/timezone to match the crontab (or the crontab's CRON_TZ), "
        "then verify again"
    )
    summary = (
        f"{len(missing)} cron slot(s) missing and {len(extra)} extra: cron {line.schedule!r} "
        f"in {cron_zone}, registry {spec.schedule!r} in {spec.timezone}"
    )
    return Check("slots", title, FAIL, summary, tuple(details), data)


def _produced(
    mode: str, fired: list[datetime], ours: Any, now: datetime, end: datetime
) -> list[datetime]:
    """The slots migrate-cron records: in enqueue mode cron's fire times mapped by
    ``--slot auto`` (the registry's latest slot at or before the fire time); otherwise the
    registry's own slots (what the scheduler will enqueue)."""
    if mode == Mode.ENQUEUE:
        out = []
        for t in fired:
            slot = ours.latest_at_or_before(t)
            if slot is not None:
                out.append(slot)
        return out
    return list(ours.iter_between(now, end))


def _original_line(
    spec: JobSpec,
    origin: Origin,
    read: Callable[[Path, bytes | None], CrontabFile],
    details: list[str],
) -> CrontabLine | None:
    """The origin's original line parsed in its file's context (env lines, CRON_TZ above
    it): the current file with the switched line put back, as cron read it before."""
    src, path = origin.source, origin.path
    assert src is not None
    if path is None or not path.exists():
        details.append(f"the crontab {path or src.file} does not exist")
        return None
    text = CrontabText.read(path)
    switched = origin.migration is not None and spec.mode == Mode.ENQUEUE
    expected = origin.migration.line if origin.migration else src.text
    found = [n for n in text.find(expected)]
    number = src.line if src.line in found else (found[0] if len(found) == 1 else None)
    if number is None:
        if switched:
            details.append(f"the switched line of {spec.name} is not in {path}")
            details.append(f"expected: {expected}")
            details.append("cron no longer enqueues it: restore the line or roll back")
        else:
            details.append(f"line {src.line} of {path} is not the registry's line any more")
            details.append(f"registry: {src.text}")
            details.append(f"file:     {text.line(src.line)}")
        return None
    if switched and not text.lines[number - 1].startswith(_schedule_part(src)):
        details.append("the switched line's schedule differs from the original line")
    restored = text.replace(number, src.text)
    parsed = read(path, restored.render())
    line = next((ln for ln in parsed.lines if ln.number == number), None)
    if line is None or line.schedule is None:
        details.append(f"line {number} of {path} is not a cron job line")
        return None
    return line


def _schedule_part(src: Any) -> str:
    from migrate_cron.migration.rewrite import command_start

    return str(src.text[: command_start(src.text, src.user is not None)])
