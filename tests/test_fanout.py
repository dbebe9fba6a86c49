"""Fan-out lines: what a line may hold, and where reading stops (no database needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from migrate_cron.fanout import parse_line, parse_time


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
