"""Findings read from the shell tree, each on a small line modelled on a real case: what the
shell really does with the line, said once, and nothing said where nothing is wrong."""

from __future__ import annotations

import pytest

from migrate_cron.crontab.entry import Severity
from tests.analysis.helpers import job, report_for, rules


def finding(text: str, rule: str):  # type: ignore[no-untyped-def]
    return next(f for f in job(text).findings if f.rule == rule)


def test_mailto_empty_drops_what_is_not_redirected() -> None:
    plain = finding('MAILTO=""\n0 1 * * * /opt/app/bin/nightly', "output-unseen")
    assert "errors included, is never seen" in plain.message
    stdout_only = finding('MAILTO=""\n0 1 * * * /opt/sync.sh >> /var/log/sync.log', "output-unseen")
    assert "errors go to cron's mail" in stdout_only.message
    wrong_order = finding('MAILTO=""\n0 1 * * * /opt/b.sh 2>&1 >> /var/log/b.log', "output-unseen")
    assert "`2>&1` comes before stdout moves" in wrong_order.message
    assert "output-unseen" not in rules('MAILTO=""\n0 1 * * * /opt/b.sh >> /var/log/b.log 2>&1')
    assert "output-unseen" not in rules("MAILTO=ops@example.com\n0 1 * * * /opt/app/bin/nightly")


def test_redirect_order_is_shellchecks_sc2069() -> None:
    found = finding("0 1 * * * /opt/b.sh 2>&1 >> /var/log/b.log", "redirect-order")
    assert "SC2069" in found.message and "shellcheck.net/wiki/SC2069" in found.message


def test_a_redirection_after_a_list_belongs_to_its_last_command() -> None:
    found = finding("*/15 * * * * drush cron && drush cr > /var/log/d.log 2>&1", "redirect-partial")
    assert "applies only to the last command" in found.message and "`drush`" in found.message
    assert "redirect-partial" not in rules("0 1 * * * cd /srv && ./x > /var/log/x.log 2>&1")


def test_output_discarded_quotes_the_file_and_says_only_what_is_true() -> None:
    everything = finding("0 1 * * * /opt/x >> /dev/null 2>&1", "output-discarded")
    assert '">> /dev/null 2>&1"' in everything.message and "all output" in everything.message
    part = finding("0 1 * * * certbot renew && /opt/hook.sh > /dev/null 2>&1", "output-discarded")
    assert "all output" not in part.message and "`hook.sh`" in part.message
    assert "output-discarded" not in rules("0 1 * * * /opt/x > /dev/null")  # errors still mailed


def test_an_ampersand_before_a_redirection_backgrounds_the_job() -> None:
    found = finding("0 1 * * * cd /srv && ./run.sh &2>/dev/null", "background")
    assert "runs in the background" in found.message
    assert "output-discarded" not in rules("0 1 * * * cd /srv && ./run.sh &2>/dev/null")


def test_a_command_that_is_a_comment_runs_nothing() -> None:
    found = finding("0 1 * * * #APP_DIR#/bin/backup nightly", "comment-command")
    assert found.severity is Severity.ERROR and "template token" in found.message


def test_sleep_given_the_script_as_a_second_operand() -> None:
    found = finding("0 1 * * * sleep 20 /opt/x.sh", "sleep-operands")
    assert found.severity is Severity.ERROR and "/opt/x.sh never runs" in found.message
    assert "sleep-operands" not in rules("0 1 * * * sleep 20; /opt/x.sh")


def test_an_interpreter_given_a_program_name() -> None:
    found = finding("0 1 * * * cd /srv/app && bash php bin/console app:x", "script-named-program")
    assert "a file called `php`" in found.message
    assert "script-named-program" not in rules("0 1 * * * bash /opt/x.sh")


@pytest.mark.parametrize(
    ("line", "fires"),
    [
        ("* 1 * * * /opt/x", True),
        ("* */1 * * * /opt/x", True),
        ("* 2,14 * * * /opt/x", True),
        ("* 9-17 * * 1-5 /opt/x", False),  # a business-hours window is deliberate
        ("0 1 * * * /opt/x", False),
        ("* * * * * /opt/x", False),
    ],
)
def test_a_bare_star_minute_under_a_written_hour(line: str, fires: bool) -> None:
    assert ("minute-star" in rules(line)) is fires
    if fires:
        assert "poll" not in rules(line)


def test_poll_is_not_said_of_bursts_or_samplers() -> None:
    assert "poll" in rules("* * * * * /opt/app/bin/process-queue")
    assert "poll" not in rules("8-13 0 * * * curl -m 30 https://example.net/scrape.php")
    assert "poll" not in rules("* * * * * /opt/collector/connection-stats.sh")
    assert "poll" not in rules("*/5 * * * * date > /srv/mnt/.heartbeat")
    assert "poll" not in rules("*/5 * * * * /opt/radar/build $(date -u +\\%H\\%M)")


def test_shellcheck_missing_is_said_once_never_a_silent_clean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from migrate_cron.analysis import shellcheck

    monkeypatch.setenv("MIGRATE_CRON_SHELLCHECK", "/nonexistent/shellcheck")
    shellcheck.binary.cache_clear()
    try:
        report = report_for("0 1 * * * source /etc/x && /opt/y\n0 2 * * * /opt/z")
    finally:
        monkeypatch.delenv("MIGRATE_CRON_SHELLCHECK")
        shellcheck.binary.cache_clear()
    missing = [f for f in report.findings if f.rule == "shellcheck-missing"]
    assert len(missing) == 1 and missing[0].line == 0
    assert "not checked" in missing[0].message


def test_env_lines_cron_reads_otherwise_than_meant() -> None:
    report = report_for(
        "MAILTO=root HOME=/\n;APP=/srv/app\nPATH=$HOME/bin:/usr/bin\n0 1 * * * cd $APP && ./x\n"
    )
    codes = {f.rule: f.message for f in report.findings}
    assert "HOME is not set at all" in codes["syntax/env-one-per-line"]
    assert "`$APP` in the lines below stays unset" in codes["syntax/env-name"]
    assert "does not expand `$HOME`" in codes["syntax/env-not-expanded"]
    assert "a line above sets `;APP`" in codes["unset-variable"]


def test_a_trailing_backslash_is_no_continuation() -> None:
    report = report_for("0 1 * * * /opt/x --all \\\n  --verbose\n")
    (cont,) = [f for f in report.findings if f.rule == "syntax/continuation"]
    assert cont.severity is Severity.ERROR and cont.line == 1


def test_a_system_line_without_its_user_field() -> None:
    from migrate_cron.crontab.parser import parse_crontab

    parsed = parse_crontab(
        "0 1 * * * root /opt/a\n*/5 * * * * cd /srv/blog && php cron.php\n",
        "/etc/cron.d/app",
        format="system",
    )
    bad = parsed.lines[1]
    assert bad.problems[0].code == "no-user" and "`cd`" in bad.problems[0].message
    assert any(p.code == "file-ignored" for p in parsed.problems)  # Debian drops the file


@pytest.mark.parametrize(
    ("line", "fires"),
    [
        ("* * * * * cd /srv/app && php artisan schedule:run >> /dev/null 2>&1", True),
        ("* * * * * /usr/local/bin/drush -r /srv/web @live cron --quiet", True),
        (
            "*/5 * * * * wget -q -O - 'https://blog.example/wp-cron.php?doing_wp_cron' >/dev/null",
            True,
        ),
        ("* * * * * php /srv/shop/bin/magento cron:run", True),
        ("* * * * * php /srv/app/artisan queue:work --stop-when-empty", False),
        ("* * * * * /srv/drush-cron-tools/bin/refresh", False),  # words in a path
        ("* * * * * curl -m 9 https://example.net/docs/cron.php.txt", False),
    ],
)
def test_framework_scheduler_from_the_tree(line: str, fires: bool) -> None:
    assert ("framework-scheduler" in rules(line)) is fires


def test_batch_limit_reads_the_option_and_its_value() -> None:
    assert (
        "--limit 200"
        in finding("*/5 * * * * php artisan mails:send --limit 200", "batch-limit").message
    )
    assert "batch-limit" not in rules("*/5 * * * * /opt/x --limit-mode=strict")


def test_a_log_sink_is_not_output_lost() -> None:
    """`x 2>&1 | logger`: what x prints is in syslog; logger's own output is nothing to see."""
    assert "output-unseen" not in rules('MAILTO=""\n0 1 * * * /opt/sync.sh 2>&1 | logger -t sync')


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("0 4 * * * tar czf /backups/www.tgz /var/www", "archive-www"),
        ('0 0 * * * echo "" > /var/log/app/debug.log', "empty-debug"),
        ("0 0 * * * echo started >> /var/log/app/marks.log", "write-marks"),
        ("*/5 * * * * date > /srv/share/.alive", "alive"),
        ("0 0 * * * echo $(date +\\%s) > /srv/app/last-run", "last-run-heartbeat"),
    ],
)
def test_names_of_archives_and_file_writes(line: str, name: str) -> None:
    assert job(line).job.name == name
