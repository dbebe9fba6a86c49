"""An unescaped ``%`` ends cron's command (crontab(5)): the rest is standard input. Lines
modelled on real ones; a property: whenever cron's split changes the command, an error says
so — and an escaped ``\\%`` never triggers it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate_cron.crontab.entry import Severity
from migrate_cron.crontab.parser import parse_crontab

from .helpers import report_for


def split_findings(line: str) -> list[str]:
    report = report_for(line)
    return [f.message for f in report.findings if f.rule == "percent-split"]


def test_a_random_sleep_cut_mid_expansion_never_worked() -> None:
    (message,) = split_findings("0 3 * * * sleep $((RANDOM % 180)); /usr/local/bin/backup")
    assert "it runs `sleep $((RANDOM`" in message and "arithmetic expansion" in message
    assert "never worked" in message


def test_a_date_in_a_file_name_is_cut_inside_its_substitution() -> None:
    (message,) = split_findings("10 3 * * * tar czf /b/$(date +%F).tgz /srv")
    assert "command substitution" in message


def test_a_quoted_format_is_cut_inside_its_quotes() -> None:
    (message,) = split_findings('5 0 * * * find /var/log -newermt "$(date +"%Y")" -delete')
    assert "never worked" in message


def test_input_on_purpose_is_named_with_its_input() -> None:
    (message,) = split_findings("5 3 * * * mail -s report ops %Report attached")
    assert "`Report attached` as its input" in message and "never worked" not in message
    report = report_for("5 3 * * * mail -s report ops %Report attached")
    (finding,) = [f for f in report.findings if f.rule == "percent-split"]
    assert finding.severity is Severity.INFO  # a mail body: `generate` registers it


def test_escaped_percent_and_no_percent_are_fine() -> None:
    assert split_findings(r"15 3 * * * date +\%F > /tmp/d") == []
    assert split_findings("15 3 * * * /usr/local/bin/backup --keep 7") == []


def test_the_finding_is_an_error() -> None:
    report = report_for("0 3 * * * echo 50% done")
    (finding,) = [f for f in report.findings if f.rule == "percent-split"]
    assert finding.severity is Severity.ERROR


_WORD = st.text(alphabet="abcdefgh$(){}'\" +-/=.", min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(before=_WORD, after=_WORD)
def test_whenever_the_split_changes_the_command_there_is_an_error(before: str, after: str) -> None:
    line = f"0 3 * * * run {before}%{after}"
    parsed = parse_crontab(line + "\n", "crontab", format="user").jobs
    if not parsed or parsed[0].stdin is None:
        return  # the % was escaped by a backslash in ``before``: cron keeps it
    findings = [
        f
        for f in report_for(line).findings
        if f.rule == "percent-split" and f.severity is Severity.ERROR
    ]
    assert findings, line
