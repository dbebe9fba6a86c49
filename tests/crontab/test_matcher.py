"""The croniter-backed wall-clock matcher: one per field set, strict bounds, safe in threads."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from migrate_cron.crontab import Schedule
from migrate_cron.crontab.matcher import make_matcher, templates, walls_after


def fields(expr: str):  # type: ignore[no-untyped-def]
    return Schedule.parse(expr).fields


def test_one_matcher_per_distinct_field_set() -> None:
    assert make_matcher(fields("@daily")) is make_matcher(fields("0 0 * * *"))
    assert make_matcher(fields("0 0 * * *")) is not make_matcher(fields("0 1 * * *"))


def test_or_rule_becomes_two_croniter_templates_and_and_rule_one() -> None:
    # Neither day field starts with *: cron ORs them, croniter (day_or=False) only intersects.
    assert templates(fields("0 0 13 * 5")) == ("0 0 13 * *", "0 0 * * 5")
    assert templates(fields("0 0 */2 * 5")) == (
        "0 0 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31 * 5",
    )
    # Expanded sets, never the text: 5-5 is 5 (croniter would read "5-5" as every minute).
    assert templates(fields("5-5 3-3 * * 7")) == ("5 3 * * 0",)


def test_friday_the_13th_or_rule() -> None:
    matcher = make_matcher(fields("0 0 13 * 5"))
    walls = list(itertools.islice(walls_after(matcher, datetime(2026, 2, 1)), 4))
    assert walls == [
        datetime(2026, 2, 6),  # a Friday
        datetime(2026, 2, 13),  # the 13th (also a Friday)
        datetime(2026, 2, 20),
        datetime(2026, 2, 27),
    ]


def test_next_and_prev_are_strict_and_ignore_seconds() -> None:
    matcher = make_matcher(fields("30 2 * * *"))
    slot = datetime(2026, 5, 4, 2, 30)
    assert matcher.next_wall(slot) == slot + timedelta(days=1)
    assert matcher.prev_wall(slot) == slot - timedelta(days=1)
    assert matcher.prev_wall(slot + timedelta(seconds=1)) == slot
    assert matcher.next_wall(slot - timedelta(seconds=1)) == slot


def test_no_match_left_is_none() -> None:
    # 29 February on a Sunday (AND rule): 2032 is the next one after 2026, 2004 the one before.
    matcher = make_matcher(fields("0 0 29 2 */7"))
    assert matcher.next_wall(datetime(2026, 1, 1)) == datetime(2032, 2, 29)
    assert matcher.prev_wall(datetime(2026, 1, 1)) == datetime(2004, 2, 29)
    assert matcher.prev_wall(datetime(1901, 1, 1)) == datetime(1880, 2, 29)


def test_running_off_the_calendar_is_none() -> None:
    matcher = make_matcher(fields("0 0 29 2 */7"))
    assert matcher.next_wall(datetime(9990, 1, 1)) is None
    assert matcher.prev_wall(datetime(1, 1, 1)) is None
    assert make_matcher(fields("0 0 * * *")).next_wall(datetime(9999, 12, 31, 23, 59)) is None


def test_threads_sharing_a_matcher_get_the_sequential_answers() -> None:
    matcher = make_matcher(fields("*/7 1-5 * * mon-fri"))
    starts = [datetime(2026, 1, 1) + timedelta(minutes=97 * i) for i in range(400)]
    expected = [(matcher.next_wall(s), matcher.prev_wall(s)) for s in starts]

    def both(start: datetime) -> tuple[datetime | None, datetime | None]:
        return matcher.next_wall(start), matcher.prev_wall(start)

    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            assert list(pool.map(both, starts)) == expected
