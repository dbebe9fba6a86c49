"""Analyse small crontab texts in tests."""

from __future__ import annotations

from datetime import UTC, datetime

from migrate_cron.analysis import JobReport, Report, analyze
from migrate_cron.crontab.parser import parse_crontab

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def report_for(
    text: str,
    *,
    tz: str = "UTC",
    durations: dict[str, float] | None = None,
    files: list[tuple[str, str | None]] | None = None,
    cron: str = "debian",
) -> Report:
    """``files`` repeats ``text`` under several (path, host) labels."""
    text = text if text.endswith("\n") else text + "\n"
    crontabs = [
        parse_crontab(text, path, host=host, cron=cron)
        for path, host in (files or [("crontab", None)])
    ]
    return analyze(crontabs, now=NOW, durations=durations, default_tz=tz)


def job(text: str, **kwargs: object) -> JobReport:
    """The report of the last job line in ``text``."""
    return report_for(text, **kwargs).jobs[-1]  # type: ignore[arg-type]


def rules(text: str, **kwargs: object) -> list[str]:
    return [f.rule for f in job(text, **kwargs).findings]
