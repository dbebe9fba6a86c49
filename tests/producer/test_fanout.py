"""Fan-out lines: what a line may hold, and why one is refused (no database needed)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone

import pytest

from migrate_cron.producer.fanout import Overlong, decode_line, parse_line, parse_time, read_lines


def test_a_line_is_a_ref_with_an_optional_payload_and_time() -> None:
    item = parse_line('{"ref": "o-1", "payload": {"n": [1, null]}, "run_at": "2030-01-01T10:00"}')
    assert (item.ref, item.payload) == ("o-1", {"n": [1, None]})
    assert item.run_at == datetime(2030, 1, 1, 10, tzinfo=UTC)
    assert parse_line('{"ref": 42}').ref == "42"  # an integer id is its decimal text
    assert parse_line('{"ref": "x"}').payload is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("not json", "not JSON"),
        ('"o-1"', "not a JSON object"),
        ('{"payload": {}}', '"ref" must be'),
        ('{"ref": ""}', '"ref" must be'),
        ('{"ref": true}', '"ref" must be'),
        ('{"ref": "' + "x" * 256 + '"}', '"ref" must be'),
        ('{"ref": "a", "Payload": 1}', "unknown key(s) Payload"),
        ('{"ref": "a", "run_at": 5}', '"run_at" must be'),
        # Text no database stores, numbers JSON cannot spell, nesting no parser takes.
        ('{"ref": "a", "payload": "\\ud800"}', "lone surrogate \\ud800, which is not Unicode"),
        ('{"ref": "a\\udfff"}', '"ref" holds a lone surrogate \\udfff'),
        ('{"ref": "a", "payload": {"k\\u0000": 1}}', "NUL character (\\u0000)"),
        ('{"ref": "a\\u0000"}', '"ref" holds a NUL'),
        ('{"ref": "a", "payload": [1, NaN]}', "NaN is not a JSON number"),
        ('{"ref": "a", "payload": -Infinity}', "-Infinity is not a JSON number"),
        ('{"ref": "a", "payload": 1e400}', "the number 1e400, which is out of range"),
        ('{"ref": "a", "payload": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"ref": "a", "run_at": "9999-12-31T23:00:00-01:00"}', "out of range"),
        ('{"ref": "a", "\\u0007": 1}', "unknown key(s) '\\x07'"),
    ],
)
def test_bad_lines_say_why(line: str, reason: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_line(line)
    assert reason in str(info.value)


def test_times_keep_their_offset_and_default_to_utc() -> None:
    assert parse_time("2030-01-01T10:00:00+02:00") == datetime(
        2030, 1, 1, 10, tzinfo=timezone(timedelta(hours=2))
    )
    assert parse_time("2030-01-01T08:00:00Z") == datetime(2030, 1, 1, 8, tzinfo=UTC)


def test_a_surrogate_pair_and_an_escaped_backslash_are_text_and_stay() -> None:
    assert parse_line('{"ref": "a", "payload": "\\ud83d\\ude00"}').payload == "\U0001f600"
    assert parse_line('{"ref": "a", "payload": "\\\\u0000"}').payload == "\\u0000"
    with pytest.raises(
        ValueError, match=r"not Unicode text \(a lone surrogate \\udcff at column 11"
    ):
        parse_line('{"ref": "a\udcff"}')  # text read with errors="surrogateescape"


def test_lines_are_utf8_strictly_with_the_column_of_the_first_bad_byte() -> None:
    assert decode_line("caf\u00e9".encode()) == "caf\u00e9"
    with pytest.raises(ValueError, match=r"not UTF-8 \(byte 0xe9 at column 4\)"):
        decode_line(b"caf\xe9")
    with pytest.raises(ValueError, match="byte 0xed at column 1"):
        decode_line("\udcff".encode("utf-8", "surrogatepass"))  # an encoded surrogate


def test_a_line_over_the_limit_is_read_through_without_being_kept() -> None:
    stream = io.BytesIO(b"12345\n" + b"x" * 100 + b"\n1234\n" + b"y" * 7)
    assert list(read_lines(stream, limit=5)) == [
        b"12345\n",
        Overlong(100),
        b"1234\n",
        Overlong(7),
    ]
