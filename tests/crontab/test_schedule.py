"""Schedule: validation, wording, and fire times identical to Debian/Vixie cron.

DST cases are hand-checked against Vixie cron 3.0 ``cron.c`` (see the module docstring of
``migrate_cron.crontab.schedule``). Dates used:
Europe/Berlin 2026-03-29 01:00 UTC (02:00 CET → 03:00 CEST), 2026-10-25 01:00 UTC (03:00 CEST →
02:00 CET); America/New_York 2026-03-08 07:00 UTC (02:00 EST → 03:00 EDT), 2026-11-01 06:00 UTC
(02:00 EDT → 01:00 EST).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from migrate_cron.crontab import Schedule, ScheduleError


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def hm(times: list[datetime]) -> list[str]:
    return [t.strftime("%m-%d %H:%M") for t in times]


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "field", "words"),
    [
        ("60 * * * *", "minute", 'bad minute "60"'),
        ("* 24 * * *", "hour", 'bad hour "24"'),
        ("* * 0 * *", "day of month", 'bad day of month "0"'),
        ("* * * 13 *", "month", 'bad month "13"'),
        ("* * * * 8", "day of week", 'bad day of week "8"'),
        ("5/15 * * * *", "minute", "5/15 is not valid cron syntax (use 5-59/15)"),
        ("*/0 * * * *", "minute", "step must be 1 or more"),
        ("* * * * monday", "day of week", 'three-letter name "mon"'),
        ("0 0 ? * MON", "day of month", "Quartz syntax"),
        ("0 0 L * *", "day of month", "Quartz/cronie syntax"),
        ("0 0 * * 1#2", "day of week", "Quartz/cronie syntax"),
        ("5-3 * * * *", "minute", "runs backwards"),
        ("1,,2 * * * *", "minute", "empty element"),
        ("0 0 30 2 *", "day of month", "never occurs in February"),
        ("0 0 31 4,6 *", "day of month", "never occurs in April, June"),
    ],
)
def test_rejects_what_cron_rejects_with_field_and_reason(expr: str, field: str, words: str) -> None:
    with pytest.raises(ScheduleError) as info:
        Schedule.parse(expr)
    assert info.value.field == field
    assert words in info.value.reason
    assert str(info.value) == info.value.reason


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("0 30 2 * * *", "6 fields: looks like a Quartz or seconds-field expression"),
        ("0 30 2 * * ? 2026", "7 fields: looks like a Quartz"),
        ("* * * *", "4 fields: cron needs 5"),
        ("", "empty schedule"),
        ("@every", 'unknown macro "@every"'),
        ("@Daily", "names are lower case"),
        ("@reboot", "@reboot has no schedule"),
    ],
)
def test_rejects_whole_expressions(expr: str, words: str) -> None:
    with pytest.raises(ScheduleError, match=words):
        Schedule.parse(expr)


def test_unknown_timezone_is_a_schedule_error() -> None:
    with pytest.raises(ScheduleError) as info:
        Schedule.parse("0 0 * * *", "Mars/Olympus")
    assert info.value.field == "timezone"


def test_reboot_only_when_allowed_and_then_it_has_no_times() -> None:
    s = Schedule.parse("@reboot", allow_reboot=True)
    assert s.is_reboot
    assert s.runs_per_day() == 0
    assert "boot" in s.describe()
    with pytest.raises(ScheduleError, match="@reboot has no schedule"):
        s.next_after(utc(2026, 1, 1))


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        Schedule.parse("* * * * *").next_after(datetime(2026, 1, 1))


def test_expr_is_kept_as_written_and_equality_is_by_value() -> None:
    a = Schedule.parse("  30 2 * * *  ", "Europe/Berlin")
    assert a.expr == "30 2 * * *"
    assert a == Schedule.parse("30 2 * * *", "Europe/Berlin")
    assert a != Schedule.parse("30 2 * * *")
    assert hash(a) == hash(Schedule("30 2 * * *", "Europe/Berlin"))


# -- field semantics -----------------------------------------------------------------------


def test_a_dash_a_means_a_not_every() -> None:
    s = Schedule.parse("5-5 3-3 * * *")
    assert hm(s.next_runs(utc(2026, 1, 1), 2)) == ["01-01 03:05", "01-02 03:05"]


def test_a_dash_a_with_a_step_is_still_a() -> None:
    # Vixie: for (i = 5; i <= 5; i += 2) → just 5 (cronsim reads it as 5-59/2).
    assert hm(Schedule.parse("5-5/2 * * * *").next_runs(utc(2026, 1, 1), 2)) == [
        "01-01 00:05",
        "01-01 01:05",
    ]


def test_seven_and_zero_are_sunday_and_names_work() -> None:
    # 2026-01-04 is a Sunday.
    for expr in ("0 12 * * 7", "0 12 * * 0", "0 12 * * SUN", "0 12 * * sun", "0 12 * jan 7"):
        assert Schedule.parse(expr).next_after(utc(2026, 1, 1)) == utc(2026, 1, 4, 12)
    assert hm(Schedule.parse("0 12 * * 5-7").next_runs(utc(2026, 1, 1), 4)) == [
        "01-02 12:00",
        "01-03 12:00",
        "01-04 12:00",
        "01-09 12:00",
    ]


def test_day_fields_or_only_when_neither_starts_with_star() -> None:
    # 1st of the month OR Monday: 2026-06-01 is a Monday, then 06-08, ...; July 1 is a Wednesday.
    s = Schedule.parse("0 0 1 * 1")
    runs = s.next_runs(utc(2026, 5, 31), 6)
    assert hm(runs) == [
        "06-01 00:00",
        "06-08 00:00",
        "06-15 00:00",
        "06-22 00:00",
        "06-29 00:00",
        "07-01 00:00",
    ]
    # */2 starts with *: AND — odd days of the month that are Mondays.
    odd_mondays = Schedule.parse("0 0 */2 * 1").next_runs(utc(2026, 5, 31), 4)
    assert all(t.weekday() == 0 and t.day % 2 == 1 for t in odd_mondays)
    assert hm(odd_mondays) == ["06-01 00:00", "06-15 00:00", "06-29 00:00", "07-13 00:00"]
    # 1-31 does not start with *: OR with Monday, i.e. every day (croniter alone says Mondays).
    assert Schedule.parse("0 0 1-31 * 1").runs_per_day() == 1.0


def test_day_of_week_step_runs_over_zero_to_seven() -> None:
    # */2 over 0-7 is Sun, Tue, Thu, Sat (cron's range for day of week includes 7).
    runs = Schedule.parse("0 0 * * */2").next_runs(utc(2026, 1, 3, 1), 4)  # after Sat 00:00
    assert [t.strftime("%a") for t in runs] == ["Sun", "Tue", "Thu", "Sat"]


def test_macros_equal_their_expansion() -> None:
    for macro, expr in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ]:
        start = utc(2026, 2, 3, 4, 5)
        assert Schedule.parse(macro).next_runs(start, 3) == Schedule.parse(expr).next_runs(start, 3)


def test_feb_29_only_in_leap_years() -> None:
    s = Schedule.parse("0 0 29 2 *")
    assert s.next_after(utc(2026, 1, 1)) == utc(2028, 2, 29)
    assert s.latest_at_or_before(utc(2026, 1, 1)) == utc(2024, 2, 29)


def test_strictly_after_and_at_or_before_at_the_boundary() -> None:
    s = Schedule.parse("*/15 * * * *")
    t = utc(2026, 1, 1, 10, 15)
    assert s.next_after(t) == utc(2026, 1, 1, 10, 30)
    assert s.latest_at_or_before(t) == t
    assert s.latest_at_or_before(t - timedelta(microseconds=1)) == utc(2026, 1, 1, 10, 0)
    assert s.next_after(t - timedelta(seconds=1)) == t
    assert list(s.iter_between(t, t + timedelta(minutes=30))) == [
        utc(2026, 1, 1, 10, 30),
        utc(2026, 1, 1, 10, 45),
    ]


def test_accepts_any_aware_timezone_and_returns_utc() -> None:
    s = Schedule.parse("30 2 * * *", "Europe/Berlin")
    local = datetime(2026, 1, 1, 12, 0, tzinfo=ZoneInfo("America/New_York"))  # 17:00 UTC
    result = s.next_after(local)
    assert result.tzinfo is UTC
    assert result == utc(2026, 1, 2, 1, 30)


# -- DST, hand-checked ---------------------------------------------------------------------


def test_berlin_spring_forward_fixed_job_runs_once_right_after_the_jump() -> None:
    s = Schedule.parse("30 2 * * *", "Europe/Berlin")
    assert hm(s.next_runs(utc(2026, 3, 28, 12), 3)) == ["03-29 01:00", "03-30 00:30", "03-31 00:30"]


def test_berlin_spring_forward_two_slots_on_one_instant_count_once() -> None:
    s = Schedule.parse("0 2,3 * * *", "Europe/Berlin")
    assert hm(s.next_runs(utc(2026, 3, 28, 12), 3)) == ["03-29 01:00", "03-30 00:00", "03-30 01:00"]


def test_berlin_spring_forward_wildcard_jobs_skip_the_missing_hour() -> None:
    s = Schedule.parse("*/30 * * * *", "Europe/Berlin")
    runs = s.iter_between(utc(2026, 3, 29, 0, 0), utc(2026, 3, 29, 2, 0))
    # 01:30 CET (00:30 UTC), then 03:00 CEST (01:00 UTC): 02:00 and 02:30 do not exist.
    assert hm(list(runs)) == ["03-29 00:30", "03-29 01:00", "03-29 01:30", "03-29 02:00"]
    hourly_30 = Schedule.parse("30 * * * *", "Europe/Berlin")  # hour is *, so wildcard
    assert hm(hourly_30.next_runs(utc(2026, 3, 29, 0, 0), 2)) == ["03-29 00:30", "03-29 01:30"]


def test_berlin_fall_back_fixed_job_runs_in_the_first_pass_only() -> None:
    s = Schedule.parse("30 2 * * *", "Europe/Berlin")
    # 02:30 CEST = 00:30 UTC; the repeated 02:30 CET (01:30 UTC) does not run.
    assert hm(s.next_runs(utc(2026, 10, 24, 12), 2)) == ["10-25 00:30", "10-26 01:30"]


def test_berlin_fall_back_wildcard_jobs_run_in_both_passes() -> None:
    s = Schedule.parse("15 * * * *", "Europe/Berlin")
    runs = s.iter_between(utc(2026, 10, 24, 23, 0), utc(2026, 10, 25, 2, 0))
    # 01:15 CEST, 02:15 CEST, 02:15 CET, 03:15 CET
    assert hm(list(runs)) == ["10-24 23:15", "10-25 00:15", "10-25 01:15"]
    every10 = list(
        Schedule.parse("*/10 * * * *", "Europe/Berlin").iter_between(
            utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 2, 0)
        )
    )
    assert len(every10) == 12  # two hours of real time, no gaps, no duplicates
    assert every10 == sorted(set(every10))


def test_new_york_both_transitions() -> None:
    fixed = Schedule.parse("30 2 * * *", "America/New_York")
    # Spring: 02:30 EST does not exist → runs at 03:00 EDT = 07:00 UTC.
    assert hm(fixed.next_runs(utc(2026, 3, 7, 12), 2)) == ["03-08 07:00", "03-09 06:30"]
    # Fall: 01:30 exists twice; a fixed 01:30 job runs at 01:30 EDT (05:30 UTC) only.
    fixed_130 = Schedule.parse("30 1 * * *", "America/New_York")
    assert hm(fixed_130.next_runs(utc(2026, 10, 31, 12), 2)) == ["11-01 05:30", "11-02 06:30"]
    wild = Schedule.parse("30 * * * *", "America/New_York")
    runs = wild.iter_between(utc(2026, 11, 1, 4, 0), utc(2026, 11, 1, 7, 0))
    assert hm(list(runs)) == ["11-01 04:30", "11-01 05:30", "11-01 06:30"]


def test_latest_at_or_before_across_dst() -> None:
    s = Schedule.parse("30 2 * * *", "Europe/Berlin")
    assert s.latest_at_or_before(utc(2026, 3, 29, 0, 59)) == utc(2026, 3, 28, 1, 30)
    assert s.latest_at_or_before(utc(2026, 3, 29, 1, 0)) == utc(2026, 3, 29, 1, 0)
    assert s.latest_at_or_before(utc(2026, 10, 25, 1, 45)) == utc(2026, 10, 25, 0, 30)
    wild = Schedule.parse("*/20 * * * *", "Europe/Berlin")
    assert wild.latest_at_or_before(utc(2026, 10, 25, 1, 5)) == utc(2026, 10, 25, 1, 0)


def test_latest_is_none_when_nothing_fired_in_the_lookback() -> None:
    # 29 February on a Sunday (AND: day of week starts with *): 2032-02-29 is a Sunday.
    s = Schedule.parse("0 0 29 2 */7")
    assert s.latest_at_or_before(utc(2030, 1, 1)) is None
    assert s.next_after(utc(2026, 1, 1)) == utc(2032, 2, 29)


# -- words and rates -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "words", "per_day"),
    [
        ("30 2 * * *", "at 02:30 every day", 1.0),
        ("* * * * *", "every minute", 1440.0),
        ("*/5 * * * *", "every 5 minutes", 288.0),
        ("0 * * * *", "every hour at :00", 24.0),
        ("*/10 9-17 * * 1-5", "every 10 minutes from 09:00 to 17:59 on Monday to Friday", None),
        ("0 4 1 * *", "at 04:00 on day 1 of the month", None),
        ("0 4 1,15 * 0", "at 04:00 on days 1, 15 of the month and on every Sunday", None),
        ("@weekly", "at 00:00 on Sunday", 1 / 7),
        ("15 3 * 1-3 sat,sun", "at 03:15 on Saturday and Sunday in January to March", None),
    ],
)
def test_describe_and_runs_per_day(expr: str, words: str, per_day: float | None) -> None:
    s = Schedule.parse(expr)
    assert s.describe() == words
    if per_day is not None:
        assert s.runs_per_day() == pytest.approx(per_day, rel=1e-3)
    assert s.runs_per_day() > 0


def test_weekday_schedule_rate_is_five_sevenths() -> None:
    assert Schedule.parse("0 9 * * 1-5").runs_per_day() == pytest.approx(5 / 7, rel=1e-2)
