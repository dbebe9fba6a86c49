"""What ``verify`` reports per check, and the job's origins every check reads.

A check is ``ok``, ``fail``, ``waiting`` (nothing could have happened yet) or ``skipped`` (it
does not apply in the job's mode); its details say what to do about a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from migrate_cron.registry import JobSpec, Migration, Source
from migrate_cron.registry.paths import source_path

OK, FAIL, WAITING, SKIPPED = "ok", "fail", "waiting", "skipped"
MAX_LISTED = 10


@dataclass(frozen=True)
class Check:
    key: str
    title: str
    status: str
    summary: str
    details: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Origin:
    """One line of the job: where it came from, its switch (None: cron still runs it) and
    the file that holds it now."""

    source: Source | None
    migration: Migration | None
    path: Path | None


def job_origins(spec: JobSpec, base: Path) -> list[Origin]:
    """Each origin of the job with its switch and the file holding it now (the switched
    file once switched), paths taken from ``base``, the registry's directory."""
    out = []
    for src in spec.sources:
        mig = spec.migration_of(src)
        path = source_path(mig.crontab if mig else src.file, base)
        out.append(Origin(src, mig, path))
    return out


def in_zone(t: datetime, tz: str) -> str:
    """``t`` to the minute as a clock in ``tz`` shows it, the zone named: what a reader
    compares with the crontab's line."""
    from zoneinfo import ZoneInfo

    return t.astimezone(ZoneInfo(tz)).isoformat(timespec="minutes") + f" ({tz})"
