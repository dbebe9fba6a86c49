from __future__ import annotations

import json
import shutil
from pathlib import Path

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
    assert out.index("1. lost work hurts most") < out.index("4. leave alone")
    assert "invoices-export" in out and "hands over: invoices" in out
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
    assert md.startswith("# Migration plan") and "## 4. leave alone" in md and "| # | job |" in md


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
