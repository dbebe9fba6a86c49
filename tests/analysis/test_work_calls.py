"""The calls that are a line's work (preparation and pipe readers left out, bodies opened) and
the one a job is named after."""

from __future__ import annotations

import pytest

from migrate_cron.analysis.tree import parse
from migrate_cron.analysis.work_calls import main_call, work_calls


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("cd /a && sleep 5 && source .env && export A=1 && . x && php x", ("php", "x")),
        ("cd /srv; umask 002; set -e; ./sync.sh", ("./sync.sh",)),
        ("date >> /var/log/x.log; /bin/x", ("/bin/x",)),
        ("echo start; /bin/x; echo end", ("/bin/x",)),
        ('echo "$(date) start" >> /log; printf x; logger hi; /opt/y', ("/opt/y",)),
        ("mysqldump db | gzip > /b/db.gz", ("mysqldump", "db")),
        ("/opt/x.sh 2>&1 | tee -a /var/log/x.log | logger", ("/opt/x.sh",)),
        ("test -x /usr/bin/foo && /usr/bin/foo --x", ("/usr/bin/foo", "--x")),
        ("[ -f /run/flag ] || exit 0; /opt/job", ("/opt/job",)),
        ("x=$(date +%F) /opt/dump $x", ("/opt/dump", "$x")),
        ("sleep $((RANDOM % 60)); flock -n /l nice /opt/work", ("/opt/work",)),
        # the producer only reports: the consumer is the work
        ("echo report | mail -s daily ops", ("mail", "-s", "daily", "ops")),
        ("date", ("date",)),
    ],
)
def test_main_call(command: str, argv: tuple[str, ...]) -> None:
    found = main_call(parse(command))
    assert found is not None
    assert found[1].argv == argv


@pytest.mark.parametrize("command", ["cd /srv", ":; true", "sleep 10", "export A=1", "A=1"])
def test_a_line_that_only_prepares_has_no_main_call(command: str) -> None:
    assert main_call(parse(command)) is None


def test_work_calls_leave_out_preparation_and_pipe_readers() -> None:
    script = parse("cd /srv && ./extract.sh | gzip > /b/x.gz && sleep 1 && ./load.sh")
    assert [inner.argv for _, inner in work_calls(script)] == [("./extract.sh",), ("./load.sh",)]


def test_work_calls_open_bodies_in_order() -> None:
    script = parse("cd /a && sh -c './one; ./two' && ./three")
    assert [inner.argv for _, inner in work_calls(script)] == [("./one",), ("./two",), ("./three",)]
