"""``shell_words`` replaces ``shlex.split`` when naming jobs (shlex was a sixth of ``analyze``'s
time on quoted commands): it must split every text exactly as shlex does, errors included."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate_cron.analysis.command import read_command, shell_words

# The characters that steer the split, with a few ordinary and non-ASCII ones around them.
PIECES = st.sampled_from(
    ["a", "b", "-x", " ", "\t", "\n", "\r", "\x0b", "'", '"', "\\", "$(", ")", "%", "é", "=", "|"]
)


def split_or_error(split: object, text: str) -> list[str] | str:
    try:
        return split(text)  # type: ignore[operator, no-any-return]
    except ValueError:
        return "error"


@settings(max_examples=3000, deadline=None)
@given(st.lists(PIECES, max_size=14).map("".join))
def test_shell_words_splits_as_shlex_does(text: str) -> None:
    assert split_or_error(shell_words, text) == split_or_error(shlex.split, text)


def test_real_world_quoting() -> None:
    line = (
        """cd "/srv/my app" && DB_USER_PW='very strong' php 'artisan' \\"orders:sync\\" """
        """--note="it's \\"done\\"" ''"""
    )
    assert shell_words(line) == shlex.split(line)
    assert split_or_error(shell_words, "echo 'unclosed") == "error"
    assert split_or_error(shell_words, "trailing \\") == "error"
    # An assigned quoted value is one word, never the job's name.
    assert read_command("DB_USER_PW='verystrong' php /srv/bin/export.php").name == "export"
