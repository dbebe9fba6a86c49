"""cron's ``%``: where the command ends and what its stdin becomes."""

from __future__ import annotations

from migrate_cron.crontab.percent import split_percent, translate_stdin


def test_split_percent_and_stdin_translation_follow_do_command_c() -> None:
    assert split_percent("a\\%b%c") == ("a\\%b", "c")
    assert split_percent("a\\\\%b") == ("a\\\\", "b")  # an escaped backslash, then a real %
    assert split_percent("no percent") == ("no percent", None)
    assert translate_stdin("x%y\\%z\\n") == "x\ny%z\\n"
