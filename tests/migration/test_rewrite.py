from __future__ import annotations

import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrate_cron.migration.crontab_file import CrontabText
from migrate_cron.migration.rewrite import (
    command_start,
    crontab_command,
    enqueue_line,
    marked_name,
    scheduler_line,
)


def cron_unescape(command: str) -> str:
    """What Vixie cron hands to the shell: up to the first unescaped %, with \\% -> %."""
    out, escaped = [], False
    for ch in command:
        if escaped:
            if ch != "%":
                out.append("\\")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            break
        else:
            out.append(ch)
    if escaped:
        out.append("\\")
    return "".join(out)


@pytest.mark.parametrize(
    ("line", "user", "start"),
    [
        ("30 2 * * * php artisan x", False, 11),
        ("  */5\t* * * *   cmd", False, 16),
        ("30 2 * * * www-data php artisan x", True, 20),
        ("@daily cmd arg", False, 7),
        ("@hourly root cmd", True, 13),
    ],
)
def test_command_start_splits_like_cron(line: str, user: bool, start: int) -> None:
    assert command_start(line, user) == start


def test_command_start_rejects_a_line_without_command() -> None:
    with pytest.raises(ValueError):
        command_start("30 2 * * *", False)


def test_enqueue_line_keeps_schedule_and_user_and_drops_stdin() -> None:
    line = "30 2\t* * 1-5 www-data php artisan x%line1%line2"
    new = enqueue_line(line, True, ["/opt/mc bin/migrate-cron", "enqueue", "x"])
    assert new == "30 2\t* * 1-5 www-data '/opt/mc bin/migrate-cron' enqueue x"


def test_scheduler_line_is_a_comment_naming_the_job() -> None:
    new = scheduler_line("30 2 * * * cmd", "invoices-export")
    assert new.startswith("#") and new.endswith("30 2 * * * cmd")
    assert marked_name(new) == "invoices-export"
    assert marked_name("# 30 2 * * * cmd") is None


def test_newlines_cannot_go_into_a_crontab_line() -> None:
    with pytest.raises(ValueError):
        crontab_command(["a\nb"])


ARG = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\0"),
    max_size=30,
)


@given(st.lists(ARG, min_size=1, max_size=5))
def test_quoted_command_reaches_the_program_unchanged_through_cron_and_sh(
    argv: list[str],
) -> None:
    text = crontab_command(argv)
    shell_text = cron_unescape(text)
    proc = subprocess.run(
        ["/bin/sh", "-c", "set -- " + shell_text + '; printf "%s\\0" "$@"'],
        capture_output=True,
        check=True,
        timeout=10,
    )
    assert proc.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1] == argv


@given(st.binary(max_size=300))
def test_crontab_text_rebuilds_any_bytes(data: bytes) -> None:
    assert CrontabText.parse(data).render() == data


def test_crontab_text_replace_touches_one_line_only() -> None:
    data = b"# c\r\nA=1\n\n* * * * * x %y\\%z\n5 * * * * last"
    text = CrontabText.parse(data)
    assert text.line(4) == "* * * * * x %y\\%z" and text.line(5) == "5 * * * * last"
    changed = text.replace(4, "* * * * * new")
    assert changed.render() == b"# c\r\nA=1\n\n* * * * * new\n5 * * * * last"
    assert changed.replace(4, text.lines[3]).render() == data
    assert text.find("A=1") == [2]
    assert "-* * * * * x %y\\%z" in text.diff(changed, "f")
