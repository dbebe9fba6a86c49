"""Rules, classification and migration order over parsed crontab lines."""

from __future__ import annotations

from migrate_cron.analysis.classifier import Classification, Recommendation, classify
from migrate_cron.analysis.finding import Finding, Rule
from migrate_cron.analysis.job import CronJob, make_job
from migrate_cron.analysis.planner import Category, PlanItem, plan
from migrate_cron.analysis.report import JobReport, Report, analyze, read_durations
from migrate_cron.vocabulary import Policy

__all__ = [
    "Category",
    "Classification",
    "CronJob",
    "Finding",
    "JobReport",
    "PlanItem",
    "Policy",
    "Recommendation",
    "Report",
    "Rule",
    "analyze",
    "classify",
    "make_job",
    "plan",
    "read_durations",
]
