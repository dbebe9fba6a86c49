"""A copy of a crontab away from cron's directories is read as a system crontab when its job
lines read as ``schedule USER command``, and as a user crontab when the word after the schedule
is a program (``php``, ``cd``, anything on PATH)."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate_cron.crontab import file_format
from migrate_cron.crontab.file_format import reads_as_user_field, starts_command
from migrate_cron.crontab.parser import parse_crontab

#: A game server's account: no such user on the machine that reads the copy.
GAME_SERVER = """\
SHELL=/bin/bash
# nightly world backups
10 4 * * * valheim /srv/valheim/bin/backup-world --keep 7
40 4 * * * valheim /srv/valheim/bin/prune-logs
*/30 * * * * valheim /srv/valheim/bin/autosave
0 5 * * 1 root sudo -u valheim /srv/valheim/bin/update
0 6 * * * root /usr/sbin/logrotate /etc/valheim-logrotate.conf
"""

#: A user's crontab whose commands start with a program and then a path.
SCRIPTS = """\
*/5 * * * * php /srv/shop/bin/console queue:work --stop-when-empty
0 1 * * * python3 /opt/reports/nightly.py
0 2 * * * bash /opt/backup/run.sh
15 3 * * * cd /srv/shop && ./bin/cleanup
30 3 * * * perl5.36 /opt/tools/rotate.pl
"""


def test_a_copy_whose_lines_name_a_user_before_a_path_is_system(tmp_path: Path) -> None:
    parsed = parse_crontab(GAME_SERVER, str(tmp_path / "game.crontab"))
    assert parsed.format == "system"
    assert parsed.format_inferred  # migrate still asks for --format
    assert "valheim" in parsed.format_reason and "5 of 5" in parsed.format_reason
    assert [(j.user, (j.command or "").split()[0]) for j in parsed.jobs] == [
        ("valheim", "/srv/valheim/bin/backup-world"),
        ("valheim", "/srv/valheim/bin/prune-logs"),
        ("valheim", "/srv/valheim/bin/autosave"),
        ("root", "sudo"),
        ("root", "/usr/sbin/logrotate"),
    ]


def test_a_copy_whose_commands_start_with_a_program_is_user(tmp_path: Path) -> None:
    parsed = parse_crontab(SCRIPTS, str(tmp_path / "me.crontab"))
    assert parsed.format == "user"
    assert [j.user for j in parsed.jobs] == [None] * 5
    assert parsed.jobs[0].command == "php /srv/shop/bin/console queue:work --stop-when-empty"


def test_an_account_that_is_also_a_word_needs_a_path_after_it(tmp_path: Path) -> None:
    """``news`` is a Debian account and an English word: it counts only before a path."""
    system = "0 3 * * * news /usr/lib/news/bin/expire-all\n0 4 * * * news /usr/lib/news/bin/x\n"
    assert parse_crontab(system, str(tmp_path / "a")).format == "system"
    user = "0 3 * * * news fetch-all\n0 4 * * * news rotate\n"
    assert parse_crontab(user, str(tmp_path / "b")).format == "user"


def test_the_place_and_the_request_beat_the_lines(tmp_path: Path) -> None:
    crond = tmp_path / "cron.d"
    crond.mkdir()
    assert parse_crontab(SCRIPTS, str(crond / "shop")).format == "system"
    assert parse_crontab(GAME_SERVER, str(tmp_path / "g"), format="user").format == "user"


@pytest.mark.parametrize(
    ("sixth", "seventh", "expected"),
    [
        ("root", "run-parts", True),
        ("root", "anything", True),  # an account everyone has: whatever follows is the command
        ("www-data", "[", True),
        ("valheim", "/srv/x.sh", True),  # no such account here: a path follows
        ("valheim", "sudo", True),
        ("valheim", "$HOME/bin/x", True),
        ("valheim", "[", True),  # [ -x /srv/… ] && …
        ("valheim", "nightly", False),  # a word after a word: the first is the command
        ("php", "/srv/x.php", False),
        ("python3", "/x.py", False),
        ("php8.2", "/srv/x.php", False),
        ("bash", "/x.sh", False),
        ("cd", "/x", False),
        ("exec", "/x", False),
        ("root", "-c", False),  # an option: root is a command here
        ("root", None, False),
        ("/usr/bin/x", "y", False),
        ("Root", "/x", False),  # not the shape of a user name
    ],
)
def test_what_reads_as_a_user_field(sixth: str, seventh: str | None, expected: bool) -> None:
    assert reads_as_user_field(sixth, seventh) is expected


def test_a_program_on_path_is_not_a_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tools installed here (``shutil.which``) are commands; an account that is also one
    (``git``) counts only before a sure command start."""
    monkeypatch.setattr(file_format, "_on_path", lambda name: name in {"frobnicate", "git"})
    assert not reads_as_user_field("frobnicate", "/etc/frob.conf")
    assert reads_as_user_field("git", "/srv/git/bin/gc-all")
    assert not reads_as_user_field("git", "gc")
    assert starts_command("frobnicate")
    assert not starts_command("nightly")
