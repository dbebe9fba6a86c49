"""The crontab file parser: cron's reading of every kind of line, byte-exact, never raising."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate_cron.crontab.entry import Kind, Severity
from migrate_cron.crontab.parser import parse_crontab, read_crontab
from migrate_cron.crontab.quartz import looks_like_field


def one(text: str, **kwargs: object):  # type: ignore[no-untyped-def]
    parsed = parse_crontab(text + "\n", "t", **kwargs)  # type: ignore[arg-type]
    return parsed.lines[-1]


# -- environment lines ---------------------------------------------------------------------


def test_env_applies_to_the_jobs_below_only() -> None:
    parsed = parse_crontab("0 1 * * * a\nX=1\n0 2 * * * b\nX=2\nY=3\n0 3 * * * c\n", "t")
    jobs = parsed.jobs
    assert [j.env for j in jobs] == [{}, {"X": "1"}, {"X": "2", "Y": "3"}]
    env_line = parsed.lines[1]
    assert env_line.kind is Kind.ENV
    assert (env_line.env_name, env_line.env_value) == ("X", "1")


def test_cron_tz_sets_the_timezone_of_later_jobs_in_cronie_only() -> None:
    text = "0 1 * * * a\nCRON_TZ=Europe/Berlin\n0 2 * * * b\nTZ=America/New_York\n0 3 * * * c\n"
    cronie = parse_crontab(text, "t", cron="cronie")
    assert [j.timezone for j in cronie.jobs] == [None, "Europe/Berlin", "Europe/Berlin"]
    debian = parse_crontab(text, "t")
    assert [j.timezone for j in debian.jobs] == [None, None, None]
    assert [p.code for p in debian.lines[1].problems] == ["zone-not-schedule"]
    only_tz = parse_crontab("TZ=Asia/Tokyo\n0 3 * * * c\n", "t", cron="cronie")
    assert only_tz.jobs[0].timezone is None
    assert only_tz.jobs[0].env == {"TZ": "Asia/Tokyo"}
    assert "only sets the commands' environment" in only_tz.lines[0].problems[0].message


def test_unknown_cron_tz_is_reported_on_its_line() -> None:
    parsed = parse_crontab("CRON_TZ=Mars/Base\n0 3 * * * c\n", "t", cron="cronie")
    problem = parsed.lines[0].problems[0]
    assert problem.code == "bad-timezone"
    assert "Mars/Base" in problem.message
    assert parsed.jobs[0].timezone is None


# -- jobs and % ----------------------------------------------------------------------------


def test_job_fields_and_command_are_kept_exactly() -> None:
    line = one("  */5\t*  * * *   php artisan x  --y=1  ")
    assert line.kind is Kind.JOB
    assert line.schedule == "*/5 * * * *"
    assert line.command == "php artisan x  --y=1  "
    assert line.stdin is None
    assert line.text == "  */5\t*  * * *   php artisan x  --y=1  "


def test_percent_ends_the_command_and_feeds_stdin() -> None:
    line = one("0 3 * * * mail -s hi ops%line one%line \\% two%")
    assert line.command == "mail -s hi ops"
    assert line.stdin == "line one\nline % two\n"
    escaped = one("0 2 * * * gzip > /b/x-$(date +\\%F).gz")
    assert escaped.command == "gzip > /b/x-$(date +\\%F).gz"
    assert escaped.stdin is None
    assert escaped.shell_command == "gzip > /b/x-$(date +%F).gz"


def test_macros_and_reboot() -> None:
    assert one("@daily /bin/x").schedule == "@daily"
    reboot = one("@reboot /bin/start")
    assert reboot.is_reboot
    bad = one("@every 5m /bin/x")
    assert bad.kind is Kind.INVALID
    assert bad.problems[0].code == "bad-macro"


def test_system_format_has_a_user_field() -> None:
    line = one("17 * * * * root cd / && run-parts /etc/cron.hourly", format="system")
    assert line.user == "root"
    assert line.command == "cd / && run-parts /etc/cron.hourly"
    no_user = one("17 * * * *", format="system")
    assert no_user.kind is Kind.INVALID


def test_auto_format_decides_per_file_and_says_why() -> None:
    system = parse_crontab("17 * * * * root run-parts /etc/cron.hourly\n", "x")
    assert system.format == "system"
    assert "root" in system.format_reason
    user = parse_crontab("17 * * * * /usr/bin/php artisan x\n", "x")
    assert user.format == "user"
    by_path = parse_crontab("17 * * * * nobody-known run\n", "/etc/cron.d/thing")
    assert by_path.format == "system"
    assert "/etc/cron.d/thing" in by_path.format_reason


# -- invalid lines -------------------------------------------------------------------------


def test_invalid_lines_do_not_stop_the_file_and_say_where() -> None:
    text = "60 * * * * a\n0 * * * * ok\n5/15 * * * * b\n0 0 * * 8 c\nrun it nightly\n"
    parsed = parse_crontab(text, "t")
    kinds = [line.kind for line in parsed.lines]
    assert kinds == [Kind.INVALID, Kind.JOB, Kind.INVALID, Kind.INVALID, Kind.INVALID]
    minute = parsed.lines[0].problems[0]
    assert minute.message.startswith('bad minute "60"')
    assert (minute.column, minute.field) == (1, "minute")
    assert "use 5-59/15" in parsed.lines[2].problems[0].message
    weekday = parsed.lines[3].problems[0]
    assert weekday.field == "day of week"
    assert weekday.column == 9
    assert "comment without #" in parsed.lines[4].problems[0].message


def test_quartz_lines_are_recognised_not_guessed() -> None:
    line = one("0 30 2 * * ? /opt/report.sh")
    assert line.kind is Kind.INVALID
    problem = line.problems[0]
    assert problem.code == "quartz"
    assert problem.message.startswith("6 fields: looks like a Quartz")
    assert problem.column == 12
    seven = one("0 0 12 ? * MON-FRI 2026 /opt/x.sh")
    assert seven.problems[0].message.startswith("7 fields")
    assert looks_like_field("MON-FRI") and looks_like_field("0/15") and looks_like_field("?")
    assert not looks_like_field("7z") and not looks_like_field("/usr/bin/php")


def test_missing_final_newline_is_reported_on_the_last_line() -> None:
    parsed = parse_crontab("0 1 * * * a\n0 2 * * * b", "t")
    last = parsed.lines[-1]
    assert last.kind is Kind.JOB
    assert last.raw == "0 2 * * * b"
    assert [p.code for p in last.problems] == ["missing-newline"]
    assert last.problems[0].severity is Severity.ERROR
    assert parsed.problems and parsed.problems[0].code == "missing-newline"


def test_carriage_returns_are_reported() -> None:
    parsed = parse_crontab("0 1 * * * a\r\n\r\n", "t")
    job, blank_cr = parsed.lines
    assert job.kind is Kind.JOB and job.command == "a\r"
    assert job.problems[0].code == "carriage-return"
    assert blank_cr.kind is Kind.INVALID


def test_round_trip_is_byte_exact_even_for_invalid_utf8(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = b"# caf\xe9 \xff\n0 1 * * * echo \xc3\xa9 %\xfe\n\n  # x\nbad\n0 2 * * * tail"
    path = tmp_path / "crontab"
    path.write_bytes(data)
    parsed = read_crontab(str(path))
    assert parsed.to_bytes() == data
    assert b"".join(line.raw_bytes for line in parsed.lines) == data
    assert [line.number for line in parsed.lines] == [1, 2, 3, 4, 5, 6]
    assert parsed.lines[1].command == "echo \u00e9 "


# -- fuzz ----------------------------------------------------------------------------------

_CRONISH = st.text(
    alphabet=st.sampled_from(list("0123456789*/-, \t\n%\\@#=\"'abcdefMONjanLW?\r")),
    max_size=300,
)


def _check(parsed, data_lines: int) -> None:  # type: ignore[no-untyped-def]
    assert [line.number for line in parsed.lines] == list(range(1, data_lines + 1))
    for line in parsed.lines:
        if line.kind is Kind.INVALID:
            assert line.problems, line
            assert line.problems[0].message
            assert line.number >= 1
        if line.kind is Kind.JOB:
            assert line.schedule is not None and line.command is not None


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400) | _CRONISH)
def test_fuzz_text_never_raises_and_every_line_is_accounted_for(text: str) -> None:
    parsed = parse_crontab(text, "fuzz")
    expected = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    _check(parsed, expected)
    assert "".join(line.raw for line in parsed.lines) == text


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_bytes_never_raise_and_round_trip(data: bytes) -> None:
    parsed = parse_crontab(data, "fuzz", format="auto")
    assert parsed.to_bytes() == data
    expected = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    _check(parsed, expected)


@settings(max_examples=200, deadline=None)
@given(_CRONISH)
def test_fuzz_system_format_never_raises(text: str) -> None:
    parsed = parse_crontab(text, "fuzz", format="system")
    assert "".join(line.raw for line in parsed.lines) == text
