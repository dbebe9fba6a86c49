"""``generate/project.py``: the ini lines that keep env.py free of database names."""

from __future__ import annotations

import re
from pathlib import Path

from migrate_cron.generate.project import ENV_DIR, dialect_lines, init_project
from migrate_cron.store.dialects import DIALECTS

REPO = Path(__file__).resolve().parents[2]


def _option(ini: str, name: str) -> str:
    match = re.search(rf"^{name} = (.*)$", ini, re.MULTILINE)
    assert match, name
    return match.group(1)


def test_the_repository_ini_says_what_the_dialect_table_says() -> None:
    ini = (REPO / "alembic" / "alembic.ini").read_text(encoding="utf-8")
    lines = dialect_lines()
    assert _option(ini, "migrate_cron_default_url") == lines["default_url"]
    assert _option(ini, "migrate_cron_drivers") == lines["drivers"]


def test_an_initialised_project_gets_them_from_the_table(tmp_path: Path) -> None:
    ini = init_project(tmp_path, Path("migrations"), None, "").read_text(encoding="utf-8")
    pairs = dict(p.split("=", 1) for p in _option(ini, "migrate_cron_drivers").split())
    assert pairs == {
        typed: full for dialect in DIALECTS.values() for typed, full in dialect.drivers.items()
    }
    assert pairs  # the table gives drivers at all
    assert _option(ini, "migrate_cron_default_url") == dialect_lines()["default_url"]


def test_env_py_names_no_database() -> None:
    code = (ENV_DIR / "env.py").read_text(encoding="utf-8")
    body = code.split('"""', 2)[2]  # past the docstring
    for dialect in DIALECTS.values():
        for name in (dialect.name, *dialect.backends, *dialect.drivers):
            assert f'"{name}' not in body, name
