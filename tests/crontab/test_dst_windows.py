"""One definition of a DST window, shared by explain, the analysis rule and the scheduler's
zone table: changes of 3 hours or more are "the clock was set" to Vixie cron, not DST."""

from __future__ import annotations

from datetime import datetime, timedelta

from migrate_cron.crontab.timezone import dst_windows, zone_table


def test_berlin_has_one_forward_and_one_backward_window_a_year() -> None:
    windows = dst_windows("Europe/Berlin", 2026, years=1)
    assert [(w.forward, w.span) for w in windows] == [(True, "02:00-02:59"), (False, "02:00-02:59")]
    assert windows[0].low == datetime(2026, 3, 29, 2, 0)


def test_a_date_line_jump_is_not_a_dst_window() -> None:
    # Samoa skipped 30 December 2011 (a 24 h jump): cron sees the clock being set, not DST.
    transitions = zone_table("Pacific/Apia").transitions(2011)
    assert any(t.is_jump for t in transitions)
    windows = dst_windows("Pacific/Apia", 2011, years=1)
    assert windows and all(w.high - w.low < timedelta(hours=3) for w in windows)
    assert len(windows) == len([t for t in transitions if not t.is_jump])


def test_fixed_zones_have_none() -> None:
    assert dst_windows("UTC", 2026) == []
