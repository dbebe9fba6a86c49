"""Each rule: matches what it should, stays quiet otherwise, and says what to do."""

from __future__ import annotations

import pytest

from migrate_cron.analysis.rules import PER_LINE
from migrate_cron.crontab.entry import Severity
from tests.analysis.helpers import job, report_for, rules


def test_every_rule_has_an_id_severity_explanation_and_fix() -> None:
    ids = [r.id for r in PER_LINE]
    assert len(ids) == len(set(ids))
    for rule in PER_LINE:
        assert rule.severity in Severity
        assert rule.explanation.endswith(".")
        assert len(rule.fix) > 20


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("*/5 * * * * /bin/x", True),
        ("* * * * * /bin/x", True),
        ("*/5 9-17 * * 1-5 /bin/x", True),
        ("*/10 * * * * /bin/x", False),
        ("0 * * * * /bin/x", False),
    ],
)
def test_poll(line: str, expected: bool) -> None:
    assert ("poll" in rules(line)) is expected


@pytest.mark.parametrize(
    "command",
    [
        "flock -n /tmp/x.lock php a",
        "/usr/bin/flock -w 10 /run/y php a",
        "run-one php a",
        "lockfile -r0 /tmp/a && php a",
        "php a --pidfile=/run/a.pid",
    ],
)
def test_overlap_lock(command: str) -> None:
    assert "overlap-lock" in rules(f"0 * * * * {command}")


def test_no_lock_no_finding() -> None:
    assert "overlap-lock" not in rules("0 * * * * php artisan blocks:rebuild")


def test_sleep_offset_and_random_delay() -> None:
    finding = next(
        f for f in job("0 3 * * * sleep 300; /bin/x").findings if f.rule == "sleep-offset"
    )
    assert "300 s" in finding.message
    spread = next(
        f
        for f in job("0 3 * * * sleep $((RANDOM \\% 60)); /bin/x").findings
        if f.rule == "sleep-offset"
    )
    assert "random" in spread.message
    assert "sleep-offset" not in rules("0 3 * * * /bin/x --sleep 5")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/bin/x >/dev/null 2>&1", True),
        ("/bin/x > /dev/null 2>&1", True),
        ("/bin/x &>/dev/null", True),
        ("/bin/x 2>/dev/null", True),
        ("/bin/x >/dev/null", False),  # stdout only: errors still mailed
        ("/bin/x 2>&1 | logger", False),
    ],
)
def test_output_discarded(command: str, expected: bool) -> None:
    assert ("output-discarded" in rules(f"0 1 * * * {command}")) is expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/bin/x || true", True),
        ("/bin/x || :", True),
        ("/bin/x; exit 0", True),
        ("/bin/x || exit 0", True),
        ("/bin/x && true-north", False),
        ("/bin/x --exit-code 0", False),
    ],
)
def test_errors_swallowed(command: str, expected: bool) -> None:
    assert ("errors-swallowed" in rules(f"0 1 * * * {command}")) is expected


@pytest.mark.parametrize(
    "command",
    [
        "cd /srv && php artisan schedule:run >> /dev/null 2>&1",
        "drush -r /srv/web cron",
        "cd /srv/blog && wp cron event run --due-now",
        "php /srv/magento/bin/magento cron:run",
        "php /srv/app/bin/console scheduler:run",
    ],
)
def test_framework_scheduler(command: str) -> None:
    found = job(f"* * * * * {command}").findings
    framework = [f for f in found if f.rule == "framework-scheduler"]
    assert framework and "migrate them one by one" in framework[0].fix


def test_framework_scheduler_only_when_frequent() -> None:
    assert "framework-scheduler" not in rules("0 3 * * * drush cron")
    assert "framework-scheduler" not in rules("*/5 * * * * php bin/console app:import-orders")


def test_batch_limit_reports_daily_capacity() -> None:
    finding = next(
        f
        for f in job("*/5 * * * * php artisan orders:push --limit=250").findings
        if f.rule == "batch-limit"
    )
    assert "250" in finding.message and "72,000 a day" in finding.message
    assert "batch-limit" in rules("0 * * * * python manage.py x --batch-size 50")
    assert "batch-limit" not in rules("0 * * * * python manage.py x --verbose")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("curl -s https://x", True),
        ("curl -s --connect-timeout 5 https://x", True),
        ("curl -fsS -m 10 https://x", False),
        ("curl --max-time 30 https://x", False),
        ("wget -q -O - https://x", True),
        ("wget --timeout=30 https://x", False),
        ("wget -T 30 https://x", False),
        ("/usr/local/bin/curlew", False),
    ],
)
def test_http_without_timeout(command: str, expected: bool) -> None:
    assert ("http-no-timeout" in rules(f"0 1 * * * {command}")) is expected


def test_dst_window_for_fixed_time_jobs_only() -> None:
    berlin = job("30 2 * * * /bin/x", tz="Europe/Berlin")
    finding = next(f for f in berlin.findings if f.rule == "dst-window")
    assert "2026-03-29" in finding.message and "03:00" in finding.message
    assert "02:00-02:59" in finding.fix
    fall = job("15 2 * * 0 /bin/x", tz="Europe/Berlin")  # Sundays: both change days
    assert any(f.rule == "dst-window" for f in fall.findings)
    assert "dst-window" not in rules("30 2 * * 1-5 /bin/x", tz="Europe/Berlin")  # never Sunday
    assert "dst-window" not in rules("30 2 * * * /bin/x", tz="UTC")
    assert "dst-window" not in rules("30 * * * * /bin/x", tz="Europe/Berlin")  # wildcard hour
    assert "dst-window" in rules("CRON_TZ=America/New_York\n30 1 * * * /bin/x\n", cron="cronie")
    assert "dst-window" not in rules("CRON_TZ=America/New_York\n30 1 * * * /bin/x\n")  # Debian


def test_reboot() -> None:
    reboot = job("@reboot /usr/bin/start")
    assert [f.rule for f in reboot.findings] == ["reboot"]
    assert reboot.next_runs == ()


@pytest.mark.parametrize(
    ("line", "evidence"),
    [
        ("0 2 * * * mail -s invoice partner@example.net < /srv/out/inv.txt", "mails partner@"),
        ("0 2 * * * curl -sS -m 30 -d @/srv/out.json https://api.example.net/in", "over HTTP"),
        ("0 2 * * * scp /srv/out/orders.csv edi@partner.example:incoming/", "uploads to"),
        ("0 2 * * * php artisan newsletter:send", "its name says it sends"),
        ("0 2 * * * /opt/app/jobs/email_reminders", "its name says it sends"),
    ],
)
def test_hand_over_needs_evidence_in_the_tree(line: str, evidence: str) -> None:
    finding = next(f for f in job(line).findings if f.rule == "hand-over")
    assert evidence in finding.message


@pytest.mark.parametrize(
    "line",
    [
        "0 6 * * * /opt/daily-report.sh | mail -s report ops",  # a report to oneself
        "0 6 * * * php artisan cache:clear",
        "0 6 * * * export PATH=/opt/bin:$PATH; /opt/bin/rotate",  # the builtin, not a hand-over
        "0 6 * * * /srv/youtube-export/bin/refresh",  # a directory's name
        "0 6 * * * curl -m 30 https://example.net/api/email/stats",  # words in a URL path
        "0 6 * * * notify-send done",  # a desktop notification tool
        "0 6 * * * php bin/console app:data-providers:sync",  # pulls data in
        "0 6 * * * find /var/lib/app/http_upload -mtime +14 -delete",
        "0 6 * * * ./manage.py clear_expired_email_verifications",
    ],
)
def test_no_hand_over_from_words(line: str) -> None:
    assert "hand-over" not in rules(line)


def test_hidden_ordering_needs_a_data_link() -> None:
    """A job that reads what an earlier one writes is timed to follow it; two jobs a few
    minutes apart with nothing in common are not."""
    report = report_for(
        "0 1 * * * /opt/etl/extract > /srv/etl/day.csv\n"
        "20 1 * * * rsync -a /srv/etl/day.csv /mnt/archive/\n"
        "0 4 * * * /opt/other\n"
    )
    copy = report.jobs[1]
    finding = next(f for f in copy.findings if f.rule == "hidden-ordering")
    assert "20 min after line 1 (extract at 01:00)" in finding.message
    assert "/srv/etl/day.csv" in finding.message
    assert "enqueue copy-day when extract succeeds" in finding.fix
    apart = report_for("0 1 * * * /opt/etl/extract\n20 1 * * * /opt/etl/transform\n")
    assert not any(f.rule == "hidden-ordering" for r in apart.jobs for f in r.findings)


def test_same_minute_in_one_application_directory_is_unordered() -> None:
    report = report_for(
        "0 3 * * * /srv/game/server/scripts/update.sh\n"
        "0 3 * * * /srv/game/server/scripts/purge-old.sh\n"
        "0 3 * * * /opt/unrelated/run-report\n"
    )
    second = report.jobs[1]
    finding = next(f for f in second.findings if f.rule == "hidden-ordering")
    assert "same minute as line 1" in finding.message and "in no order" in finding.message
    assert not any(f.rule == "hidden-ordering" for f in report.jobs[2].findings)


def test_a_copy_of_a_snapshot_races_its_rotation() -> None:
    """rsnapshot LEVEL rotates LEVEL.0, LEVEL.1… (rsnapshot(1)): a copy of hourly.0 in the
    minute `rsnapshot hourly` runs reads a directory being rotated."""
    report = report_for(
        "0 */6 * * * rsnapshot hourly\n"
        "30 3 * * * rsnapshot daily\n"
        "0 6 * * * rsync -a /srv/snapshots/hourly.0 /mnt/offsite/\n"
        "30 4 * * * rsync -a /srv/snapshots/daily.0 /mnt/offsite/\n"
    )
    race = next(f for f in report.jobs[2].findings if f.rule == "hidden-ordering")
    assert "same minute as line 1" in race.message and "hourly snapshot" in race.message
    after = next(f for f in report.jobs[3].findings if f.rule == "hidden-ordering")
    assert "60 min after line 2" in after.message and "line 3" not in after.message


def test_hidden_ordering_needs_the_same_days() -> None:
    report = report_for("0 1 * * 1 /opt/a\n10 1 * * 2 /opt/b\n")
    assert not any(f.rule == "hidden-ordering" for r in report.jobs for f in r.findings)


def test_duplicate_across_hosts() -> None:
    text = "*/5 * * * * php bin/console app:import\n0 3 * * * /opt/only-here\n"
    report = report_for(text, files=[("crontab", "web1"), ("crontab", "web2")])
    dup = [f for f in report.findings if f.rule == "duplicate-host"]
    assert {(f.host, f.line) for f in dup} == {("web1", 1), ("web2", 1), ("web1", 2), ("web2", 2)}
    assert "web1, web2" in dup[0].message
    single = report_for(text)
    assert not any(f.rule == "duplicate-host" for f in single.findings)


def test_longer_than_interval_with_durations() -> None:
    text = "*/5 * * * * php artisan orders:push-erp\n0 3 * * * /opt/backup.sh\n"
    report = report_for(text, durations={"orders-push-erp": 420, "backup": 3600})
    first, second = report.jobs
    finding = next(f for f in first.findings if f.rule == "longer-than-interval")
    assert finding.severity is Severity.ERROR
    assert "420 s" in finding.message and "every 300 s" in finding.message
    assert not any(f.rule == "longer-than-interval" for f in second.findings)
    by_line = report_for(text, durations={"crontab:1": 301})
    assert any(f.rule == "longer-than-interval" for f in by_line.jobs[0].findings)


def test_syntax_findings_carry_location_and_a_specific_fix() -> None:
    report = report_for("0 30 2 * * ? /opt/r.sh\n0 0/15 * * * ? /opt/c.sh\n61 * * * * /x\n")
    quartz, quartz2, minute = report.findings
    assert quartz.rule == "syntax/quartz" and quartz.line == 1 and quartz.column == 12
    assert '"30 2 * * * /opt/r.sh"' in quartz.fix
    assert '"*/15 * * * * /opt/c.sh"' in quartz2.fix
    assert minute.rule == "syntax/bad-schedule" and minute.field == "minute"
    assert minute.location == "crontab:3:1"
    assert "minute field" in minute.fix
