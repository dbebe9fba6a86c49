"""docs/registry.md is the registry's reference: it lists every key the loader takes, and the
one right spelling each error shows (``KEY_EXAMPLES``) loads as written. ``registry check``
lists every bad entry with file:line, job, key and that spelling, from the installed command."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from migrate_cron.registry import KEY_EXAMPLES, load_registry
from migrate_cron.registry.keys import JOB_KEYS as _KEYS
from migrate_cron.registry.tables import TABLE_KEYS as _TABLE_KEYS
from tests.conftest import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "registry.md"


def _documented() -> set[str]:
    return set(re.findall(r"^\| `(\w+)`", DOC.read_text(encoding="utf-8"), re.M)) | set(
        re.findall(r"^\| `\w+` / `(\w+)`", DOC.read_text(encoding="utf-8"), re.M)
    )


def test_every_key_the_loader_takes_is_documented() -> None:
    assert set(_KEYS) - _documented() == set()
    assert set(_TABLE_KEYS) - _documented() == set()
    assert set(KEY_EXAMPLES) == set(_KEYS)


@pytest.mark.parametrize("key", sorted(k for k, v in KEY_EXAMPLES.items() if " = " in v))
def test_each_example_loads_as_written(key: str, tmp_path: Path) -> None:
    example = KEY_EXAMPLES[key]
    body = example if key in ("command", "handler") else f'command = "true"\n{example}'
    if key == "user":
        body += "\n"
    path = tmp_path / "migrate-cron.toml"
    path.write_text(f'[jobs.a]\n{body}\n[jobs.b]\ncommand = "true"\n{_needs(key)}')
    tomllib.loads(path.read_text())
    loaded = load_registry(path, partial=True)
    assert "a" in loaded.jobs, loaded.errors
    assert example in DOC.read_text(encoding="utf-8") or key in ("stdin",)


def _needs(key: str) -> str:
    # on_success / on_failure name other jobs: the examples' names exist.
    names = {"on_success": "invoices-upload", "on_failure": "page-ops"}
    return f'[jobs.{names[key]}]\ncommand = "true"\n' if key in names else ""


def test_registry_check_lists_every_bad_entry_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "migrate-cron.toml"
    path.write_text(
        '[jobs.good]\ncommand = "true"\n\n'
        '[jobs.a]\ncommand = "true"\nbackoff = 60\n\n'
        '[jobs.b]\ncommand = "true"\nmax_attempts = "3"\n\n'
        '[jobs.c]\ncommand = "true"\npolicy = "often"\n'
    )
    done = run_cli("registry", "check", "--registry", str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error: ")]
    assert lines == [
        f"error: {path}:6: job 'a': key 'backoff': must be a table, not 60"
        " (e.g. backoff = { base = 30, cap = 3600 })",
        f"error: {path}:10: job 'b': key 'max_attempts': must be an integer, not '3'"
        " (e.g. max_attempts = 5)",
        f"error: {path}:14: job 'c': key 'policy': 'often' is not one of skip, run-once,"
        ' backfill (e.g. policy = "run-once")',
    ], done.stderr
    data = json.loads(run_cli("registry", "check", "--registry", str(path), "--json").stdout)
    assert data["ok"] is False and data["jobs"] == 1
    assert [(e["job"], e["line"], e["key"]) for e in data["errors"]] == [
        ("a", 6, "backoff"),
        ("b", 10, "max_attempts"),
        ("c", 14, "policy"),
    ]
    path.write_text('[jobs.good]\ncommand = "true"\n')
    ok = run_cli("registry", "check", "--registry", str(path))
    assert ok.returncode == 0 and "every entry loads" in ok.stderr
    assert run_cli("registry", "check", "--registry", str(tmp_path / "none.toml")).returncode == 2
