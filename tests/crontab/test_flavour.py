"""Each difference between Debian's cron, cronie and busybox crond is a tested branch.

docs/cron-flavours.md lists every rule with its source and points at the test here.
"""

from __future__ import annotations

import pytest

from migrate_cron.crontab.entry import Kind
from migrate_cron.crontab.flavour import FLAVOURS, Cron, flavour
from migrate_cron.crontab.parser import parse_crontab


def codes(text: str, cron: str = "debian", path: str = "crontab") -> list[str]:
    parsed = parse_crontab(text, path, cron=cron)
    return [p.code for line in parsed.lines for p in line.problems]


def test_every_flavour_is_described() -> None:
    assert set(FLAVOURS) == set(Cron)
    assert all(f.source and f.label for f in FLAVOURS.values())
    with pytest.raises(ValueError):
        flavour("vixie")


# -- timezones ------------------------------------------------------------------------------


def test_cron_tz_sets_the_schedule_zone_on_cronie_only() -> None:
    text = "CRON_TZ=America/New_York\n30 1 * * * /opt/bin/nightly-load\n"
    assert parse_crontab(text, "c", cron="cronie").jobs[0].timezone == "America/New_York"
    for cron in ("debian", "busybox"):
        parsed = parse_crontab(text, "c", cron=cron)
        assert parsed.jobs[0].timezone is None  # the daemon's zone
        assert parsed.jobs[0].env["CRON_TZ"] == "America/New_York"  # still in the environment
        problem = parsed.lines[0].problems[0]
        assert problem.code == "zone-not-schedule" and "ignores CRON_TZ" in problem.message


def test_tz_only_sets_the_commands_environment_on_every_cron() -> None:
    for cron in Cron:
        parsed = parse_crontab("TZ=Asia/Tokyo\n0 9 * * * /usr/bin/report\n", "c", cron=cron)
        assert parsed.jobs[0].timezone is None
        assert parsed.jobs[0].env == {"TZ": "Asia/Tokyo"}
        assert "only sets the commands' environment" in parsed.lines[0].problems[0].message


# -- field syntax ---------------------------------------------------------------------------


def test_debian_accepts_a_random_range_with_both_ends_only() -> None:
    # Debian's crontab -n (3.0pl1-162) passes "6~15 * * * *" and rejects "~ * * * *".
    job = parse_crontab("6~15 2 * * * /usr/local/bin/backup\n", "c").jobs[0]
    assert job.schedule == "6 2 * * *"
    assert [(p.code, p.severity) for p in job.problems] == [("random-range", "warning")]
    assert codes("~ * * * * /bin/true\n") == ["bad-schedule"]
    assert codes("6~15 2 * * * /usr/local/bin/backup\n", "busybox") == ["bad-schedule"]


def test_cronie_random_range_is_one_value_with_a_finding() -> None:
    parsed = parse_crontab("6~15 2 * * * /usr/local/bin/backup\n", "c", cron="cronie")
    job = parsed.jobs[0]
    assert job.schedule == "6 2 * * *"
    assert job.raw.startswith("6~15 ")  # the line itself is kept as written
    assert [p.code for p in job.problems] == ["random-range"]
    assert "6~15" in job.problems[0].message
    bare = parse_crontab("~ * * * * /bin/true\n", "c", cron="cronie").jobs[0]
    assert bare.schedule == "0 * * * *"


def test_a_step_after_a_single_number() -> None:
    line = "5/15 * * * * /opt/reports/bin/ping.sh\n"
    assert codes(line, "debian") == ["bad-schedule"]
    assert codes(line, "cronie") == ["bad-schedule"]
    busybox = parse_crontab(line, "c", cron="busybox").jobs[0]
    assert busybox.schedule == "5 * * * *"  # once an hour, at :05
    assert [p.code for p in busybox.problems] == ["step-ignored"]
    ranged = parse_crontab("5-59/15 * * * * /x\n", "c", cron="busybox").jobs[0]
    assert ranged.schedule == "5-59/15 * * * *" and not ranged.problems


# -- whole files ----------------------------------------------------------------------------

CRON_D = "# /etc/cron.d/backup\n0 2 * * * root /usr/local/bin/backup\n61 * * * * root /x\n"


def test_debian_ignores_a_system_crontab_with_one_bad_line() -> None:
    parsed = parse_crontab(CRON_D, "/etc/cron.d/backup")
    assert parsed.ignored
    (problem,) = parsed.problems
    assert problem.code == "file-ignored" and "line 3 is rejected" in problem.message
    cronie = parse_crontab(CRON_D, "/etc/cron.d/backup", cron="cronie")
    assert not cronie.ignored and len(cronie.jobs) == 1  # cronie drops only the bad line


def test_debian_ignores_a_system_crontab_without_final_newline() -> None:
    text = "0 2 * * * root /usr/local/bin/backup"
    parsed = parse_crontab(text, "/etc/cron.d/backup")
    assert parsed.ignored and "no newline" in parsed.problems[-1].message
    assert not parse_crontab(text, "/etc/cron.d/backup", cron="cronie").ignored


def test_a_user_crontab_is_not_ignored_whole() -> None:
    # `crontab` refuses to install it; the line findings say so (no file-level verdict).
    parsed = parse_crontab("61 * * * * /x\n0 1 * * * /y", "crontab", format="user")
    assert not parsed.ignored
    assert [p.code for p in parsed.problems] == ["missing-newline"]


# -- pasted Quartz / seconds lines ----------------------------------------------------------


def test_a_pasted_seconds_field_star_is_a_bad_command_on_debian_and_cronie() -> None:
    # Debian's `crontab -n` (3.0pl1-162) and cronie's entry.c: a command may not start with *.
    text = "0 */5 * * * * php /srv/shop/artisan x:sync\n"
    for cron in ("debian", "cronie"):
        (line,) = parse_crontab(text, "c", format="user", cron=cron).lines
        assert line.kind is Kind.INVALID
        message = line.problems[0].message
        assert '"bad command"' in message and "for the command" not in message


def test_busybox_runs_a_pasted_line_with_the_star_glob_expanded() -> None:
    parsed = parse_crontab("0 */5 * * * * php /srv/shop/artisan x:sync\n", "c", cron="busybox")
    (job,) = parsed.jobs
    assert job.schedule == "0 */5 * * *"
    assert job.command == "* php /srv/shop/artisan x:sync"
    (problem,) = job.problems
    assert problem.code == "quartz" and problem.severity == "error"
    assert "cron accepts it" in problem.message and "rejects" not in problem.message
    assert '"* php /srv/shop/artisan x:sync"' in problem.message and "expands" in problem.message


def test_a_pasted_line_with_question_mark_runs_on_debian() -> None:
    # `0 0 2 * * ? cmd`: five valid fields (00:00 on day 2), then "? cmd" is the command.
    parsed = parse_crontab("0 0 2 * * ? /opt/reports/bin/monthly.sh\n", "c", format="user")
    (job,) = parsed.jobs
    assert job.schedule == "0 0 2 * *" and job.command == "? /opt/reports/bin/monthly.sh"
    (problem,) = job.problems
    assert problem.severity == "error" and '"?"' in problem.message
    assert "at 00:00 on day 2" in problem.message


def test_a_pasted_line_whose_five_fields_are_bad_is_rejected_and_says_why() -> None:
    (line,) = parse_crontab("0 30 2 * * ? /opt/reports/bin/daily.sh\n", "c", format="user").lines
    assert line.kind is Kind.INVALID
    message = line.problems[0].message
    assert "rejects this line" in message and 'bad hour "30"' in message
    assert "for the command" not in message


def test_a_pasted_line_in_a_system_crontab_has_a_bad_user() -> None:
    parsed = parse_crontab("0 0 2 * * * root /usr/sbin/vzdump --all\n", "/etc/cron.d/vzdump")
    (line,) = [ln for ln in parsed.lines if ln.kind is Kind.INVALID]
    assert "bad username" in line.problems[0].message and line.problems[0].field == "user"
    assert parsed.ignored  # and Debian then ignores the whole file
    cronie = parse_crontab("0 0 2 * * * root /x\n", "/etc/cron.d/vzdump", cron="cronie")
    assert '"bad command"' in cronie.lines[0].problems[0].message  # cronie checks * first
