"""Shell rules on lines modelled on real crontabs: bash syntax under /bin/sh, pipelines that
hide a failure, anacron/systemd guards, unreplaced @placeholder@ tokens, variables nothing
sets."""

from __future__ import annotations

import pytest

from tests.analysis.helpers import job, rules


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("*/5 * * * * source /home/app/.env && php /srv/app/artisan schedule:run", "SC3046"),
        ("0 3 * * * cd /srv && source venv/bin/activate && python sync.py", "SC3046"),
        ("0 3 * * * /usr/local/bin/backup.sh &>> /var/log/backup.log", '"&>>" is "&" then'),
        ("0 3 * * * /usr/local/bin/backup.sh &> /dev/null", '"&>" is "&" then'),
        ("0 3 * * * /usr/bin/php /srv/x.php > /dev/null 2&>&1", "`2` becomes an extra argument"),
        ("0 * * * * [[ -f /var/run/app.flag ]] && /opt/app/run.sh", "SC3010"),
        ("0 1 * * * diff <(ls /a) <(ls /b) > /tmp/diff.txt", "SC3001"),
        ("0 1 * * * sleep $((RANDOM \\% 60)); /opt/x", "SC3028"),
    ],
)
def test_bash_syntax_under_sh_is_an_error(line: str, said: str) -> None:
    """ShellCheck's SC3xxx codes (and dash's reading of `&>`, which ShellCheck does not flag
    for `&>>`) each become one sentence of what dash does."""
    finding = next(f for f in job(line).findings if f.rule == "bashism")
    assert finding.severity == "error"
    assert said in finding.message and "/bin/sh" in finding.message


def test_bash_syntax_is_fine_when_the_file_sets_a_bash_shell() -> None:
    assert "bashism" not in rules("SHELL=/bin/bash\n0 3 * * * source /etc/app.env && /opt/x")
    # The same command under /bin/sh in another file still gets it (per-line cache keyed by SHELL).
    text = "0 3 * * * source /etc/app.env && /opt/x"
    assert "bashism" in rules(f"SHELL=/bin/bash\n{text}\nSHELL=/bin/sh\n{text}")


def test_no_bashism_in_sh_syntax() -> None:
    for line in (
        "0 3 * * * . /etc/app.env && /opt/x >> /var/log/x.log 2>&1",
        "0 * * * * [ -f /var/run/app.flag ] && /opt/app/run.sh",
        "0 * * * * /opt/resource-sync --source=/data",
        "0 * * * * test -x /opt/x || true",
    ):
        assert "bashism" not in rules(line), line


@pytest.mark.parametrize(
    "line",
    [
        "0 2 * * * /usr/local/bin/db-dump | gzip > /backup/db.sql.gz",
        '0 6 * * * /opt/reports/daily.sh | mail -s "daily report" ops@example.com',
        "*/10 * * * * /opt/app/check.sh 2>&1 | logger -t check",
    ],
)
def test_a_pipeline_hides_the_commands_exit_status(line: str) -> None:
    finding = next(f for f in job(line).findings if f.rule == "pipe-status")
    assert finding.severity == "warning" and "succeeds whatever it is fed" in finding.message


def test_a_pipe_into_grep_in_a_condition_is_not_a_hidden_failure() -> None:
    """`psql … | grep -q x && y`: a failing psql gives grep no input, so grep fails too."""
    assert "pipe-status" not in rules("0 * * * * psql -c 'select 1' | grep -q 1 && /opt/y")


def test_no_pipe_status_finding_without_a_pipe_or_with_pipefail() -> None:
    assert "pipe-status" not in rules("0 2 * * * /opt/x || /opt/alert")
    assert "pipe-status" not in rules(
        "SHELL=/bin/bash\n0 2 * * * set -o pipefail; /usr/local/bin/db-dump | gzip > /b.gz"
    )


def test_anacron_and_systemd_guards_make_the_line_a_fallback() -> None:
    anacron = job(
        "25 6 * * * test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }"
    )
    finding = next(f for f in anacron.findings if f.rule == "distro-guard")
    assert "anacron is installed the line does nothing" in finding.message
    systemd = job(
        "09,39 * * * * [ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd/system ]; "
        "then /usr/lib/php/sessionclean; fi"
    )
    assert any(f.rule == "distro-guard" for f in systemd.findings)
    assert "distro-guard" not in rules("0 1 * * * /usr/sbin/anacron -s")


def test_unreplaced_placeholders_are_an_error() -> None:
    finding = next(
        f
        for f in job("*/10 * * * * @PHP_BIN@ /var/www/app/cron.php").findings
        if f.rule == "placeholder"
    )
    assert finding.severity == "error" and "@PHP_BIN@" in finding.message
    assert "placeholder" not in rules("0 1 * * * mail -s x ops@example.com admin@example.org")
    assert "placeholder" not in rules("0 1 * * * /usr/bin/notify --to=@ops")


def test_a_variable_nothing_sets_expands_to_nothing() -> None:
    """``cd $APP_DIR && …`` pasted from a shell where APP_DIR was exported: under cron it is
    ``cd && …`` (the home directory), and ``-p$MYSQL_PWD`` an empty password."""
    finding = next(
        f
        for f in job("*/5 * * * * cd $APP_DIR && php artisan queue:work --stop-when-empty").findings
        if f.rule == "unset-variable"
    )
    assert finding.severity == "warning" and "$APP_DIR" in finding.message
    dump = job("30 2 * * * mysqldump -u backup -p${MYSQL_PWD} shop | gzip > /backup/shop.sql.gz")
    assert any("$MYSQL_PWD" in f.message for f in dump.findings if f.rule == "unset-variable")


@pytest.mark.parametrize(
    "text",
    [
        "APP_DIR=/srv/app\n*/5 * * * * cd $APP_DIR && php artisan queue:work",  # set above
        "0 3 * * * cd $HOME && ./backup.sh >> $HOME/backup.log 2>&1",  # cron sets HOME
        "0 3 * * * sleep $((RANDOM % 60)); /usr/local/bin/report",  # arithmetic, no $
        "0 3 * * * ${BACKUP:-/usr/local/bin/backup} --all",  # a default for unset
        "0 3 * * * for f in /srv/in/*.csv; do /usr/local/bin/load $f; done",  # set by the loop
        "0 3 * * * D=$(date +\\%F); tar czf /b/$D.tgz /srv",  # set on the line
        "0 3 * * * awk '{print $1}' /var/log/app.log > /tmp/first",  # single quotes: awk's
    ],
)
def test_no_unset_variable_when_something_sets_it(text: str) -> None:
    assert "unset-variable" not in rules(text)


def test_no_pipe_status_for_an_alert_branch_or_a_report() -> None:
    """`check || echo x | mail`: the pipe is the alert; `echo x | mail` has nothing to hide."""
    assert "pipe-status" not in rules(
        "*/2 * * * * /opt/check.sh || echo failed | mail -s alert ops@example.com"
    )
    assert "pipe-status" not in rules("0 7 * * * echo hello | mail -s hi ops@example.com")
