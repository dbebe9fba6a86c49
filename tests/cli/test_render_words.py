"""The two small pieces every human output goes through: counts that agree with their noun,
line lists folded into runs, and crontab text escaped before it reaches a terminal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from migrate_cron.cli.render.escape import printable
from migrate_cron.cli.render.numbers import counted, numbered, plural, runs


def test_counts_agree_with_their_noun() -> None:
    assert counted(0, "job") == "0 jobs"
    assert counted(1, "job") == "1 job"
    assert counted(2, "finding") == "2 findings"
    assert counted(12_345, "line") == "12,345 lines"
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"
    assert plural(1, "is", "are") == "is" and plural(2, "is", "are") == "are"


def test_line_lists_fold_runs_of_three_or_more() -> None:
    assert numbered("line", [3]) == "line 3"
    assert numbered("line", [12, 3, 5, 9, 10, 11, 3]) == "lines 3, 5, 9-12"
    assert runs([2, 3]) == "2, 3"
    assert runs(range(1, 200, 2), limit=3) == "1, 3, 5 and 97 more"


@given(st.sets(st.integers(min_value=1, max_value=300)))
def test_runs_name_exactly_the_numbers(numbers: set[int]) -> None:
    said: set[int] = set()
    for part in filter(None, runs(numbers, limit=10_000).split(", ")):
        low, _, high = part.partition("-")
        said.update(range(int(low), int(high or low) + 1))
    assert said == numbers


def test_printable_escapes_what_a_terminal_would_act_on() -> None:
    assert printable("php artisan schedule:run >> /dev/null 2>&1") == (
        "php artisan schedule:run >> /dev/null 2>&1"
    )
    assert printable("a\x1b[31mb\x07") == "a\\x1b[31mb\\x07"
    assert printable("caf\udce9 café") == "caf\\xe9 café"  # an undecodable byte, then é
    assert printable("x\u202ey\x85\x7f") == "x\\u202ey\\x85\\x7f"
    assert printable("a\tb\r\n") == "a\tb\\x0d\\x0a"


@given(st.text())
def test_printable_output_is_always_printable(text: str) -> None:
    assert printable(text).replace("\t", "").isprintable()
