"""docs/grafana-dashboard.json asks only for metrics the code exports.

The names are read from the code — the exporter's collector (``metrics.QueueCollector``, whose
families are declared without a database) and a worker's registry (``worker.metrics``) — so a
renamed metric or label fails here instead of leaving an empty panel. Every query of the
dashboard (panels and template variables) is read, and so are its label matchers and
``by (…)`` clauses against each metric's labels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from prometheus_client import CollectorRegistry

from migrate_cron.metrics import QueueCollector
from migrate_cron.store import Store
from migrate_cron.worker.metrics import WorkerMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
#: What a family of each type is scraped as (the suffixes prometheus_client adds).
SUFFIXES = {"gauge": ("",), "counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
METRIC = re.compile(r"\bmigrate_cron_\w+")


def exported() -> dict[str, set[str]]:
    """Every series name the exporter and a worker serve -> its labels."""
    registry = CollectorRegistry(auto_describe=True)
    WorkerMetrics(registry, lambda: 0).finished("k", "done", 1.0)  # labelled samples appear
    families = [*QueueCollector(cast(Store, None)).describe(), *registry.collect()]
    out: dict[str, set[str]] = {}
    for family in families:
        labels: set[str] = set()
        for sample in family.samples:
            labels |= set(sample.labels)
        labels |= set(getattr(family, "_labelnames", ()))  # declared, no sample yet
        for suffix in SUFFIXES[family.type]:
            out[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return out


def queries(node: Any) -> Iterator[str]:
    """Every PromQL text in the dashboard: panel targets' ``expr``, variables' queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                yield value
            elif key == "query" and isinstance(value, str | dict):
                yield from ([value] if isinstance(value, str) else queries(value))
            else:
                yield from queries(value)
    elif isinstance(node, list):
        for item in node:
            yield from queries(item)


def test_every_metric_the_dashboard_queries_is_exported() -> None:
    names = exported()
    assert "migrate_cron_runs_total" in names and "migrate_cron_since_switch" in names
    dashboard = json.loads(DASHBOARD.read_text())
    used = {m for q in queries(dashboard) for m in METRIC.findall(q)}
    assert used, "no query found"
    assert sorted(used - set(names)) == []


def test_the_dashboard_uses_one_label_for_the_job_and_labels_that_exist() -> None:
    names = exported()
    for name, labels in names.items():
        assert "cron_job" not in labels and "job" not in labels, name
    dashboard = json.loads(DASHBOARD.read_text())
    for q in queries(dashboard):
        for metric, matchers in re.findall(r"\b(migrate_cron_\w+)\{([^}]*)\}", q):
            for label in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers):
                assert label in names[metric], f"{metric} has no label {label!r}: {q}"
        for grouped in re.findall(r"\bby \(([^)]*)\)", q):
            wanted = {g.strip() for g in grouped.split(",")}
            metrics = METRIC.findall(q)
            assert any(wanted <= names[m] for m in metrics), f"by ({grouped}) in {q}"


def test_the_dashboard_shows_the_three_numbers_trends_and_what_the_switch_bought() -> None:
    text = DASHBOARD.read_text()
    for metric in (
        "migrate_cron_oldest_ready_age_seconds",
        "migrate_cron_failed_jobs",
        "migrate_cron_job_duration_seconds",
        "migrate_cron_runs_total",
        "migrate_cron_run_duration_seconds_bucket",
        "migrate_cron_since_switch",
    ):
        assert metric in text, metric
    assert "histogram_quantile(0.95" in text and "histogram_quantile(0.5" in text
