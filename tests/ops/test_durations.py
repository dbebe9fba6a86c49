from __future__ import annotations

import pytest

from migrate_cron.errors import UsageError
from migrate_cron.ops.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("5m", 300),
        ("24h", 86400),
        ("7d", 604800),
        ("2w", 1209600),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("250ms", 0.25),
        ("45", 45),
        (" 10M ", 600),
        ("1d 12h", 129600),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "h", "5x", "5 minutes", "1mo", "-5m", "1y", "m5", "5m3"])
def test_parse_duration_refuses_and_names_the_option(text: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_duration(text, option="--since")
    assert "--since" in str(err.value)
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (0.25, "250ms"),
        (4.5, "4.5s"),
        (42, "42s"),
        (423, "7m 03s"),
        (5400, "1h 30m"),
        (3 * 86400 + 4 * 3600, "3d 4h"),
        (-90, "-1m 30s"),
        (300, "5m"),
        (3600, "1h"),
        (86400, "1d"),
    ],
)
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text
