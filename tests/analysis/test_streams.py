"""Where the output and errors of typical cron lines end up: mailed by cron, dropped, into a
pipe, into a file. (tests/analysis/test_tree.py checks the same reading against bash.)"""

from __future__ import annotations

import pytest

from migrate_cron.analysis.streams import CLOSED, CRON, NULL, PIPE, fate, fates, shown_program
from migrate_cron.analysis.tree import parse


def _fates(command: str) -> list[tuple[str, str, str]]:
    return [(f.program, f.stdout, f.stderr) for f in fates(parse(command))]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/opt/x.sh", [("x.sh", CRON, CRON)]),
        (
            "/usr/bin/php /srv/app/artisan schedule:run >> /dev/null 2>&1",
            [("artisan", NULL, NULL)],
        ),
        (
            "cd /srv && php artisan x > /var/log/x.log 2>&1",
            [("artisan", "file:/var/log/x.log", "file:/var/log/x.log")],
        ),
        # 2>&1 first points stderr at cron's capture, then stdout moves to the log
        ("/opt/backup.sh 2>&1 >>/var/log/b.log", [("backup.sh", "file:/var/log/b.log", CRON)]),
        ("/opt/x.sh >/dev/null", [("x.sh", NULL, CRON)]),
        ("/opt/x.sh 2>/dev/null", [("x.sh", CRON, NULL)]),
        ("/opt/x.sh 1>/dev/null 2>/tmp/err", [("x.sh", NULL, "file:/tmp/err")]),
        ("/opt/x.sh &> /var/log/x.log", [("x.sh", "file:/var/log/x.log", "file:/var/log/x.log")]),
        ("/opt/x.sh &>> /var/log/x.log", [("x.sh", "file:/var/log/x.log", "file:/var/log/x.log")]),
        ("/opt/x.sh >& /var/log/x.log", [("x.sh", "file:/var/log/x.log", "file:/var/log/x.log")]),
        ("/opt/x.sh > /dev/stderr", [("x.sh", CRON, CRON)]),
        (
            "/opt/x >/var/log/x.log 2>/dev/stdout",
            [("x", "file:/var/log/x.log", "file:/var/log/x.log")],
        ),
        ("/opt/x 2>/dev/stdout >/var/log/x.log", [("x", "file:/var/log/x.log", CRON)]),
        ("/opt/x.sh 2>&1 >/dev/null", [("x.sh", NULL, CRON)]),
        (
            "mysqldump db | gzip > /b/db.gz",
            [("mysqldump", PIPE, CRON), ("gzip", "file:/b/db.gz", CRON)],
        ),
        (
            "mysqldump db 2>/dev/null | gzip > /b/db.gz",
            [("mysqldump", PIPE, NULL), ("gzip", "file:/b/db.gz", CRON)],
        ),
        ("/opt/x.sh | logger -t x", [("x.sh", PIPE, CRON), ("logger", CRON, CRON)]),
        (
            "/opt/x.sh 2>&1 | tee -a /var/log/x.log",
            [("x.sh", PIPE, PIPE), ("tee", CRON, CRON)],
        ),
        ("flock -n /l /opt/x.sh > /dev/null 2>&1", [("x.sh", NULL, NULL)]),
        ("sudo -u app php /srv/x.php >/dev/null", [("x.php", NULL, CRON)]),
        ("python3 -u /srv/m.py 2>>/var/log/m.err", [("m.py", CRON, "file:/var/log/m.err")]),
        ("cd /srv; sleep 3; source .env; /opt/x >/dev/null", [("x", NULL, CRON)]),
        ("curl -s https://x/y > /dev/null", [("curl", NULL, CRON)]),
        ("wget -q -O - https://x/y >/dev/null 2>&1", [("wget", NULL, NULL)]),
        (
            "/opt/a.sh >/var/log/a.log && /opt/b.sh",
            [("a.sh", "file:/var/log/a.log", CRON), ("b.sh", CRON, CRON)],
        ),
        (
            "/opt/a.sh && /opt/b.sh >/var/log/b.log 2>&1",
            [("a.sh", CRON, CRON), ("b.sh", "file:/var/log/b.log", "file:/var/log/b.log")],
        ),
        (
            "{ /opt/a.sh; /opt/b.sh; } >>/var/log/ab.log 2>&1",
            [
                ("a.sh", "file:/var/log/ab.log", "file:/var/log/ab.log"),
                ("b.sh", "file:/var/log/ab.log", "file:/var/log/ab.log"),
            ],
        ),
        # the group's redirection comes first; the pipe then takes mysqldump's stdout
        (
            "{ mysqldump db | gzip; } > /b/db.gz",
            [("mysqldump", PIPE, CRON), ("gzip", "file:/b/db.gz", CRON)],
        ),
        # >&- closes stdout: nothing the command prints reaches cron or a file
        ("/opt/x.sh >&-", [("x.sh", CLOSED, CRON)]),
        ("/opt/x.sh 2>&- >/dev/null", [("x.sh", NULL, CLOSED)]),
    ],
)
def test_fates_of_typical_lines(command: str, expected: list[tuple[str, str, str]]) -> None:
    assert _fates(command) == expected


def test_preparation_and_substitutions_have_no_fate_of_their_own() -> None:
    found = fates(parse("cd /srv && export A=1 && /opt/x $(date +%F) > /tmp/out"))
    assert [(f.program, f.stdout) for f in found] == [("x", "file:/tmp/out")]


def test_the_redirections_that_decided_it_are_kept_as_written() -> None:
    (only,) = fates(parse("/opt/x.sh < /etc/in > /var/log/x.log 2>&1"))
    assert only.redirects == ("> /var/log/x.log", "2>&1")


def test_a_command_under_a_redirected_group_keeps_the_group_first() -> None:
    call = parse("( /opt/x.sh 2>&1 ) >/var/log/x.log").calls[0]
    assert [r.raw for r in call.chain] == [">/var/log/x.log", "2>&1"]
    assert fate(call) == ("file:/var/log/x.log", "file:/var/log/x.log")


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (("php", "/srv/x/y.php"), "y.php"),
        (("python3", "-u", "/srv/m.py"), "m.py"),
        (("/usr/bin/rsync", "-a"), "rsync"),
        (("node",), "node"),
        ((), ""),
    ],
)
def test_shown_program(argv: tuple[str, ...], shown: str) -> None:
    assert shown_program(argv) == shown
