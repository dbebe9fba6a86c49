"""Recommendation, missed-run policy and the four sentences."""

from __future__ import annotations

import pytest

from migrate_cron.analysis import Policy, Recommendation
from tests.analysis.helpers import job


@pytest.mark.parametrize(
    ("line", "recommendation", "policy"),
    [
        ("*/5 * * * * php artisan orders:push-erp --limit=250", "queue", "skip"),
        ("* * * * * python manage.py send_queued_mail", "queue", "skip"),
        (
            "30 2 * * * php artisan invoices:send --date=$(date -d yesterday +\\%F)",
            "schedule+enqueue",
            "backfill",
        ),
        (
            "0 7,19 * * * curl --max-time 60 -X POST https://pay.example.com/v1/payouts",
            "schedule+enqueue",
            "run-once",
        ),
        # A word in a name is no evidence: an export may well stay on the host.
        ("30 2 * * * php artisan invoices:export", "keep", "skip"),
        ("15 0 * * * pg_dumpall | gzip > /b/all.sql.gz", "keep", "run-once"),
        ("20 3 * * * find /var/log/app -mtime +14 -delete", "keep", "skip"),
        ("0 6 * * 1 /opt/weekly-report.sh | mail -s report ops", "keep", "skip"),
        ("@reboot /usr/bin/start-thing", "keep", "skip"),
        ("* * * * * cd /srv && php artisan schedule:run", "keep", "skip"),
        ("0 4 * * * /opt/bin/compute-something", "keep", "skip"),
    ],
)
def test_recommendation_and_policy(line: str, recommendation: str, policy: str) -> None:
    verdict = job(line).classification
    assert verdict.recommendation is Recommendation(recommendation), verdict.reason
    assert verdict.policy is Policy(policy), verdict.policy_reason
    assert verdict.reason and verdict.policy_reason


def test_reasons_name_the_evidence() -> None:
    invoice = job("30 2 * * * php artisan invoices:send").classification
    assert "invoices-send" in invoice.reason
    upload = job("0 3 * * * rsync -a /srv/exports/ partner@ftp.example.net:inbox/").classification
    assert "uploads to partner@ftp.example.net" in upload.reason
    poller = job("*/5 * * * * php artisan orders:push").classification
    assert "every 5 minutes" in poller.reason


def test_four_sentences_two_or_more_true_means_move() -> None:
    line = "*/5 * * * * flock -n /tmp/x.lock php artisan orders:push-erp --limit=250 || true"
    verdict = job(line).classification
    by_id = {s.id: s for s in verdict.sentences}
    assert [s.id for s in verdict.sentences] == [
        "polls-idle",
        "overlaps",
        "user-waits",
        "lost-on-failure",
    ]
    assert by_id["polls-idle"].true and "every 5 minutes" in by_id["polls-idle"].why
    assert by_id["overlaps"].true and "overlap-lock" in by_id["overlaps"].why
    assert by_id["user-waits"].true
    assert by_id["lost-on-failure"].true and "errors are swallowed" in by_id["lost-on-failure"].why
    assert verdict.true_sentences == 4 and verdict.should_move


def test_a_quiet_nightly_job_has_no_true_sentence() -> None:
    verdict = job("0 4 * * * /opt/bin/compute-something").classification
    assert verdict.true_sentences == 0
    assert not verdict.should_move


def test_durations_make_the_overlap_sentence_true() -> None:
    verdict = job("0 * * * * /opt/bin/aggregate", durations={"aggregate": 4000}).classification
    overlaps = next(s for s in verdict.sentences if s.id == "overlaps")
    assert overlaps.true and "longer-than-interval" in overlaps.why
