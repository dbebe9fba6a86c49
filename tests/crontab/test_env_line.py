"""Environment lines read as cron's ``load_env`` reads them."""

from __future__ import annotations

from migrate_cron.crontab.env_line import parse_env


def test_env_lines_like_cron() -> None:
    assert parse_env("MAILTO=ops@example.com") == ("MAILTO", "ops@example.com")
    assert parse_env("  PATH = /usr/bin:/bin   ") == ("PATH", "/usr/bin:/bin")
    assert parse_env('MAILTO=""') == ("MAILTO", "")
    assert parse_env("MAILTO=") == ("MAILTO", "")
    assert parse_env("A='quoted value'  ") == ("A", "quoted value")
    assert parse_env('"NAME"="x y"') == ("NAME", "x y")
    assert parse_env("HOME=$HOME/x") == ("HOME", "$HOME/x")  # never expanded
    assert parse_env("A='x' trailing") is None  # only blanks may follow a quoted value
    assert parse_env("A='unterminated") is None
    assert parse_env("* * * * * FOO=bar cmd") is None
    assert parse_env("@daily X=1 cmd") is None
    assert parse_env("=value") is None
