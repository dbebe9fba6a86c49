"""Migration order: lost work, pollers, long runs, then the rest — with reasons."""

from __future__ import annotations

from migrate_cron.analysis import Category, plan
from migrate_cron.analysis.job import make_job
from migrate_cron.crontab.parser import parse_crontab
from tests.analysis.helpers import report_for

TEXT = """\
0 4 * * * /opt/bin/compute-something
*/5 * * * * php artisan search:reindex-pending
0 * * * * flock -n /tmp/agg.lock /opt/bin/aggregate
30 2 * * * php artisan invoices:send || true
@reboot /usr/bin/start
*/2 * * * * python manage.py retry_webhooks
"""


def test_plan_orders_by_pain_and_says_why() -> None:
    report = report_for(TEXT)
    items = list(report.plan)
    assert [i.order for i in items] == list(range(1, 7))
    assert [(i.line, i.category) for i in items] == [
        (4, Category.LOST_WORK),  # invoices + errors swallowed: 2 reasons
        (6, Category.LOST_WORK),  # webhooks
        (2, Category.POLLER),
        (3, Category.LONG_RUN),
        (1, Category.LEAVE),
        (5, Category.LEAVE),
    ]
    invoice = items[0]
    assert invoice.reasons[0] == "hands over: its name says it sends (invoices-send)"
    assert "finding: errors-swallowed" in invoice.reasons
    assert invoice.name == "invoices-send"
    assert invoice.recommendation == "schedule+enqueue"
    assert invoice.ref == "crontab:4"
    assert items[2].reasons[0] == "polls every 5 min"
    assert items[3].reasons == ("finding: overlap-lock",)


def test_plan_works_from_lines_and_findings_alone() -> None:
    """What `migrate-cron plan` needs: jobs (from parsed lines) and findings, nothing else."""
    parsed = parse_crontab(TEXT, "crontab")
    jobs = [make_job(line, None, "UTC", f"job-{line.number}") for line in parsed.jobs]
    report = report_for(TEXT)
    items = plan(jobs, report.findings)
    assert [i.line for i in items] == [i.line for i in report.plan]
    assert items[0].name == "job-4"
