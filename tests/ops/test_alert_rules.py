"""The shipped alert rules name only metrics and labels we export (a renamed metric would
otherwise leave an alert that never fires), and pass ``promtool check rules`` where installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from migrate_cron.metrics import QueueCollector
from migrate_cron.notify.sender import Notifier
from migrate_cron.registry.notify_targets import NotifySettings
from migrate_cron.store import open_store
from migrate_cron.worker.metrics import WorkerMetrics

RULES = Path(__file__).parents[2] / "samples" / "deploy" / "prometheus-rules.yaml"
SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")


def exported(tmp_path: Path) -> dict[str, set[str]]:
    """Every sample name we can serve → its labels (without a database: descriptions only)."""
    store = open_store(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        families = list(QueueCollector(store).describe())
    finally:
        store.dispose()
    registry = CollectorRegistry()
    WorkerMetrics(registry, running=lambda: 0).finished("k", "done", 1.0)  # a sample: labels
    notifier = Notifier(NotifySettings(), {}, lambda *_: None)
    try:
        families += list(registry.collect()) + list(notifier.registry.collect())
    finally:
        notifier.close(drain=0)
    names: dict[str, set[str]] = {}
    for family in families:
        labels = set(getattr(family, "_labelnames", ()) or ())
        for sample in family.samples:
            labels |= set(sample.labels)
        names[family.name] = labels
        names[family.name + "_total"] = labels
    return names


def test_every_rule_names_metrics_and_labels_we_export(tmp_path: Path) -> None:
    names = exported(tmp_path)
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    assert len(rules) >= 8
    for rule in rules:
        expr = rule["expr"]
        used = set(re.findall(r"\bmigrate_cron_\w+", expr))
        assert used, rule["alert"]
        labels: set[str] = set()
        for name in used:
            base = name
            for suffix in SUFFIXES:
                if name.endswith(suffix) and name not in names:
                    base = name[: -len(suffix)]
            assert base in names or name in names, f"{rule['alert']}: {name} is not exported"
            labels |= names.get(name, names.get(base, set()))
        for label in re.findall(r"\$labels\.(\w+)", str(rule.get("annotations", {}))):
            assert label in labels | {"instance"}, f"{rule['alert']}: no label {label!r}"
        for grouped in re.findall(r"by \(([^)]*)\)", expr):
            for label in grouped.split(","):
                assert label.strip() in labels, f"{rule['alert']}: no label {label!r}"
        assert rule["labels"]["severity"] in {"page", "ticket"}
        assert "job" not in re.findall(r"\$labels\.(\w+)", str(rule.get("annotations", {})))


def test_promtool_accepts_the_rules_where_it_is_installed() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (the YAML test above checks names and labels)")
    result = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
