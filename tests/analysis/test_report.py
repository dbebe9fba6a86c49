"""The report: JSON document, streaming form, durations CSV."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate_cron.analysis.report import read_durations
from migrate_cron.analysis.report_json import json_chunks, to_json
from migrate_cron.errors import UsageError
from tests.analysis.helpers import report_for

ROOT = Path(__file__).resolve().parents[2]


def test_streamed_json_equals_the_document() -> None:
    text = (ROOT / "samples" / "shop.crontab").read_text() * 3
    text += (ROOT / "samples" / "pasted-quartz.crontab").read_text()
    report = report_for(text, tz="Europe/Berlin", durations={"orders-push-erp": 400})
    streamed = json.loads("".join(json_chunks(report)), object_pairs_hook=_unique_keys)
    assert streamed == to_json(report)
    assert streamed["summary"]["jobs"] == 26
    assert streamed["findings"]  # the rejected Quartz lines are not entries


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys in {keys}"
    return dict(pairs)


def test_every_finding_appears_once() -> None:
    report = report_for((ROOT / "samples" / "pasted-quartz.crontab").read_text())
    doc = to_json(report)
    in_entries = sum(len(e["findings"]) for e in doc["entries"])
    assert in_entries + len(doc["findings"]) == len(report.findings)
    rejected = [f for f in doc["findings"] if f["rule"].startswith("syntax/")]
    assert len(rejected) == doc["summary"]["rejected"] == 8
    assert all(f["line"] and f["text"] and f["fix"] for f in rejected)


def test_read_durations() -> None:
    assert read_durations("name,seconds\nbackup,3600\n# x\n\nfile:3, 12.5\n") == {
        "backup": 3600.0,
        "file:3": 12.5,
    }
    with pytest.raises(UsageError, match="durations:2"):
        read_durations("a,1\nb,slow\n")
    with pytest.raises(UsageError, match="expected name,seconds"):
        read_durations("lonely\n")
