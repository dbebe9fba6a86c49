"""Job names come from what a line does, over every sample and fixture crontab: never a
shell keyword or builtin, a wrapper, ``job``/``job-N``, a user field, or a quoted or assigned
value; and the same on every run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from migrate_cron.analysis.command import _KEYWORDS, _SKIPPED, _WRAPPERS, read_command
from migrate_cron.migration.planning import analyze_files

from .helpers import report_for

ROOT = Path(__file__).resolve().parents[2]
CRONTABS = sorted(
    p
    for p in [*(ROOT / "samples").iterdir(), *(ROOT / "tests" / "fixtures").rglob("*")]
    if p.is_file() and p.suffix in ("", ".crontab") and not p.name.startswith(".")
)
BAD = _KEYWORDS | _SKIPPED | set(_WRAPPERS) | {"sh", "bash", "cron", "www-data", "root"}


@pytest.mark.parametrize("path", CRONTABS, ids=lambda p: str(p.relative_to(ROOT)))
def test_names_say_what_the_line_does(path: Path) -> None:
    report = analyze_files([path], default_tz="UTC")
    names = [r.job.name for r in report.jobs]
    for name in names:
        assert name not in BAD, f"{path}: {name}"
        assert not re.fullmatch(r"job(-\d+)?", name), f"{path}: {name}"
    assert names == [r.job.name for r in analyze_files([path], default_tz="UTC").jobs]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("if [ -x /usr/bin/foo ]; then /usr/bin/foo --x; fi", "foo"),
        ("DB_USER_PW='verystrong' php bin/console app:sync", "app-sync"),
        (
            "test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily )",
            "cron-daily",
        ),
        ("command -v debian-sa1 > /dev/null && debian-sa1 1 1", "debian-sa1"),
        ("/usr/local/bin/drush -r /srv/client-a/web cron --quiet", "drush-cron"),
        ("echo report | mail -s daily ops", "mail"),
    ],
)
def test_names_skip_keywords_tests_and_assigned_values(command: str, name: str) -> None:
    assert read_command(command).name == name


def test_a_line_with_no_telling_word_is_named_by_when_and_where() -> None:
    report = report_for("0 3 * * * sleep $((RANDOM % 60))\n*/10 * * * * :; true")
    assert [r.job.name for r in report.jobs] == ["daily-0300-crontab", "every-10min-crontab"]
