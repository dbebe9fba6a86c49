from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


def _copy(tmp_path: Path, name: str = "shop.crontab") -> Path:
    target = tmp_path / name
    shutil.copy(ROOT / "samples" / name, target)
    return target


def test_plan_orders_by_pain_and_says_why(tmp_path: Path) -> None:
    _copy(tmp_path)
    proc = run_cli("plan", "shop.crontab", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert (
        out.index("Lost work hurts most — 4 jobs")
        < out.index("Polls every few minutes — 1 job")
        < out.index("Keep on cron — 3 jobs")
    )
    # Lost work by evidence: a sending sub-command, a mail to an address, an HTTP POST.
    assert "invoices-export" in out and "hands over: its name says it sends (upload-sftp)" in out
    assert "hands over: mails owner@shop.example" in out
    assert "hands over: sends data over HTTP with curl" in out
    assert "the framework's scheduler" in out
    assert "migrate-cron generate registry shop.crontab" in proc.stderr


def test_plan_json_and_markdown(tmp_path: Path) -> None:
    _copy(tmp_path)
    items = json.loads(run_cli("plan", "shop.crontab", "--json", cwd=tmp_path).stdout)["plan"]
    assert [i["order"] for i in items] == list(range(1, len(items) + 1))
    first = items[0]
    assert first["step"] == 1 and first["next"].startswith("migrate-cron migrate ")
    assert all(i["next"] is None for i in items if i["step"] == 4)
    md = run_cli("plan", "shop.crontab", "--markdown", cwd=tmp_path).stdout
    assert md.startswith("# Migration plan") and "## Keep on cron — 3 jobs" in md
    assert "| # | job |" in md


def test_plan_uses_the_registry_names(tmp_path: Path) -> None:
    _copy(tmp_path)
    gen = ("generate", "registry", "shop.crontab", "--tz", "UTC", "--force")
    assert run_cli(*gen, cwd=tmp_path).returncode == 0
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(registry.read_text().replace("[jobs.invoices-export", "[jobs.datev"))
    items = json.loads(run_cli("plan", "shop.crontab", "--json", cwd=tmp_path).stdout)["plan"]
    row = next(i for i in items if i["name"] == "invoices-export")
    assert row["registry_name"] == "datev" and "migrate datev" in row["next"]


def test_plan_usage_errors(tmp_path: Path) -> None:
    _copy(tmp_path)
    both = run_cli("plan", "shop.crontab", "--json", "--markdown", cwd=tmp_path)
    assert both.returncode == 2 and "choose one" in both.stderr
    missing = run_cli("plan", "nope.crontab", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.crontab" in missing.stderr
    bad_tz = run_cli("plan", "shop.crontab", "--tz", "Mars/Base", cwd=tmp_path)
    assert bad_tz.returncode == 2 and "IANA" in bad_tz.stderr
    assert "Traceback" not in missing.stderr + both.stderr + bad_tz.stderr


PLAN = (
    "*/5 * * * * /opt/shop/bin/push-orders-to-erp\n"
    "0 2 * * * /opt/shop/bin/export-invoices || true\n"
    "30 3 * * 0 /opt/shop/bin/prune-sessions\n"
    "45 3 * * * find /var/tmp/shop -mtime +7 -delete\n"
)


@pytest.mark.parametrize("columns", ["80", "120"])
def test_plan_headings_are_not_numbered_and_its_rows_are(tmp_path: Path, columns: str) -> None:
    """A heading that reads "2. ..." next to a row "2." looks like a step of the plan; only
    the rows are numbered, 1, 2, 3 … across the headings."""
    (tmp_path / "shop.cron").write_text(PLAN)
    done = run_cli("plan", "shop.cron", env={"COLUMNS": columns}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= int(columns) for line in lines), max(lines, key=len)
    numbered = [line for line in lines if re.match(r"\d+\.\s", line)]
    assert [int(line.split(".")[0]) for line in numbered] == [1, 2, 3, 4]
    assert all("shop.cron:" in line for line in numbered)  # every numbered line is a job
    headings = [line for line in lines if re.match(r"[A-Z]", line)]
    assert headings and all(re.search(r" — \d+ jobs?$", h.rstrip()) for h in headings)
    assert "Keep on cron — 2 jobs" in headings
    md = run_cli("plan", "shop.cron", "--markdown", cwd=tmp_path).stdout
    titles = [line for line in md.splitlines() if line.startswith("## ")]
    assert titles and not [t for t in titles if re.match(r"## \d", t)]
    rows = [line for line in md.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(rows) == 4


def test_one_vocabulary_from_analyze_to_migrate(tmp_path: Path) -> None:
    """analyze's three words are plan's and migrate's: each says which `migrate --to` it
    means, the four sentences are spelled out where their N/4 appears, and plan's next command
    is a `migrate --to` one; no heading is numbered like a row."""
    _copy(tmp_path)
    shown = run_cli("analyze", "shop.crontab", cwd=tmp_path, env={"COLUMNS": "100"})
    text = " ".join(shown.stdout.split())
    assert "queue: `migrate NAME --to enqueue` now" in text
    assert "schedule+enqueue: `migrate NAME --to enqueue`" in text and "`--to scheduler`" in text
    assert "keep: nothing to migrate: cron is right for it" in text
    assert "3/4 sentences" in text
    assert "The four sentences (a line's N/4): it runs every few minutes" in text
    data = json.loads(run_cli("analyze", "shop.crontab", "--json", cwd=tmp_path).stdout)
    recs = [e["recommendation"] for e in data["entries"] if "recommendation" in e]
    tos = {r["action"]: r["migrate_to"] for r in recs}
    assert tos == {"queue": ["enqueue"], "schedule+enqueue": ["enqueue", "scheduler"], "keep": []}
    plan = run_cli("plan", "shop.crontab", cwd=tmp_path).stdout
    headings = [ln for ln in plan.splitlines() if " — " in ln and "job" in ln.split(" — ")[-1]]
    assert headings and not any(re.match(r"\s*\d", h) for h in headings), headings
    items = json.loads(run_cli("plan", "shop.crontab", "--json", cwd=tmp_path).stdout)["plan"]
    nexts = [i["next"] for i in items if i["next"]]
    assert nexts and all(" --to enqueue " in n for n in nexts)
    words = {i["recommendation"] for i in items}
    assert words <= {"queue", "schedule+enqueue", "keep"}, words
