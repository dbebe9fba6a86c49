"""``migrate-cron web`` as a command: its refusals at start-up, and what it costs the others
(nothing: no other command imports the web stack, and the web layer has no SQL)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_cli

WEB = Path(__file__).resolve().parents[2] / "migrate_cron" / "web"


def test_actions_need_a_long_enough_token(tmp_path: Path) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}"}
    missing = run_cli("web", "--allow-actions", env={**env, "MIGRATE_CRON_WEB_TOKEN": ""})
    assert missing.returncode == 2 and "MIGRATE_CRON_WEB_TOKEN" in missing.stderr
    short = run_cli("web", "--allow-actions", env={**env, "MIGRATE_CRON_WEB_TOKEN": "abc"})
    assert short.returncode == 2 and "too short" in short.stderr
    window = run_cli("web", "--window", "0s", env=env)
    assert window.returncode == 2 and "--window" in window.stderr
    assert "Traceback" not in missing.stderr + short.stderr + window.stderr


def test_help_names_the_safety_options() -> None:
    shown = run_cli("web", "--help", env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    for option in ("--host", "--port", "--allow-actions", "--read-only", "Examples"):
        assert option in shown.stdout, option


def test_other_commands_do_not_import_the_web_stack() -> None:
    code = (
        "import sys, migrate_cron.cli.app; "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'jinja2', 'migrate_cron.web') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_web_layer_has_no_sql() -> None:
    """Pages read the Store's named operations (ARCHITECTURE.md: web/ is above ops/ and
    store/, never SQL of its own)."""
    for path in WEB.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            bad = [n for n in names if n.startswith("sqlalchemy")]
            assert not bad, f"{path.name} imports {bad}"


def test_the_readme_shows_the_screenshots() -> None:
    root = WEB.parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "## Dashboard" in readme
    for name in ("overview", "job-running", "kind", "jobs", "workers", "migration"):
        assert f"(docs/img/{name}.png)" in readme
        assert (root / "docs" / "img" / f"{name}.png").stat().st_size > 10_000
