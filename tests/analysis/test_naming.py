"""Job names come from what a line does, over every sample and fixture crontab: never a
shell keyword or builtin, a wrapper, ``job``/``job-N``, a user field, or a quoted or assigned
value; and the same on every run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from migrate_cron.analysis.naming import naming
from migrate_cron.analysis.unique_names import name_lines
from migrate_cron.migration.planning import analyze_files

from .helpers import report_for

ROOT = Path(__file__).resolve().parents[2]
# Every crontab the repository holds: the samples (cron.d-shop and etc-crontab included) and the
# parser's malformed fixtures (*.cron) — not the demo script, CSVs or deploy files.
CRONTABS = sorted(
    p
    for p in [
        *(ROOT / "samples").iterdir(),
        *(ROOT / "tests" / "fixtures").rglob("*.cron"),
        *(ROOT / "tests" / "fixtures").rglob("*.crontab"),
    ]
    if p.is_file() and p.suffix not in (".sh", ".csv", ".md") and not p.name.startswith(".")
)
# Shell keywords and builtins, wrappers, interpreters and users: never what a job is called.
BAD = set(
    [
        "if",
        "then",
        "else",
        "fi",
        "for",
        "do",
        "done",
        "case",
        "esac",
        "while",
        "until",
        "[",
        "[[",
        "!",
        "{",
        "}",
        "echo",
        "printf",
        "command",
        "eval",
        "set",
        "cd",
        "sleep",
        "test",
        "true",
        ":",
        "export",
        "source",
        ".",
        "umask",
        "nice",
        "ionice",
        "nohup",
        "timeout",
        "flock",
        "setlock",
        "lckdo",
        "chronic",
        "cronic",
        "run-one",
        "sudo",
        "exec",
        "env",
        "time",
        "solo",
        "cronitor",
        "sh",
        "bash",
        "cron",
        "www-data",
        "root",
        "find",
        "php",
        "python",
        "python3",
        "node",
        "docker",
    ]
)


_ASSIGNED = re.compile(r"""\b[A-Za-z_]\w*=(?:'([^']*)'|"([^"]*)"|([^\s;&|]+))""")
_QUOTED = re.compile(r"'([^'/]*)'|\"([^\"/]*)\"")


def _slugs(values: list[str]) -> set[str]:
    return {s for v in values if (s := re.sub(r"[^a-z0-9]+", "-", v.lower()).strip("-"))}


def _not_names(command: str, env: dict[str, str]) -> set[str]:
    """What a name must never be taken from: assigned values (inline or env lines) and quoted
    strings that are not paths (a password, a subject line, a monitor key)."""
    values = [v for m in _ASSIGNED.finditer(command) for v in m.groups() if v]
    values += [v for m in _QUOTED.finditer(command) for v in m.groups() if v]
    return _slugs([*values, *env.values()])


@pytest.mark.parametrize("path", CRONTABS, ids=lambda p: str(p.relative_to(ROOT)))
def test_names_say_what_the_line_does(path: Path) -> None:
    report = analyze_files([path], default_tz="UTC")
    names = [r.job.name for r in report.jobs]
    users = {r.job.line.user for r in report.jobs if r.job.line.user}
    for r, name in zip(report.jobs, names, strict=True):
        base = re.sub(r"-\d+$", "", name)  # a second line with the same name gets -2, -3…
        assert base not in BAD, f"{path}: {name}"
        assert not re.fullmatch(r"job(-\d+)?", name), f"{path}: {name}"
        assert base not in users, f"{path}: {name} is the line's user"
        line = r.job.line
        assert base not in _not_names(line.command or "", line.env), f"{path}: {name}"
    # Stable: the same file analysed again (a regenerated registry) gives the same names.
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
        ("echo report | mail -s daily ops", "mail-ops"),
        ("cronitor exec d3x0c1 /usr/local/bin/backup-db.sh", "backup-db"),
        ('cronitor exec d3x0c1 "/usr/local/bin/backup-db.sh --full"', "backup-db"),
        (
            "cd /srv/client-a && drush -r web simplenews:spool-send --limit=1000",
            "simplenews-spool-send",
        ),
        ("find /var/www/shop/storage/logs -name '*.log' -mtime +14 -delete", "clean-logs"),
        (
            "ionice -c3 nice -n 19 chronic timeout 3h /usr/local/bin/backup-site blog",
            "backup-site-blog",
        ),
        ("sudo -u www-data env APP_ENV=prod php /srv/app/artisan queue:work", "queue-work"),
    ],
)
def test_names_skip_keywords_tests_and_assigned_values(command: str, name: str) -> None:
    assert name_lines([(naming(command, {}), "0 3 * * *")]) == [name]


def test_a_line_with_no_telling_word_is_named_by_when_and_where() -> None:
    report = report_for("0 3 * * * sleep $((RANDOM % 60))\n*/10 * * * * :; true")
    # When and what, never the crontab's file name (the same line in two files is one job).
    assert [r.job.name for r in report.jobs] == ["daily-job", "every-10min-job"]
