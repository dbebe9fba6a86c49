"""docs/analysis.md's naming table is what the code does: each example row, run through the
naming rules, gives the name the page prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from migrate_cron.analysis.naming import naming
from migrate_cron.analysis.unique_names import name_lines

DOC = Path(__file__).resolve().parents[2] / "docs" / "analysis.md"
_ROW = re.compile(r"^\| `([^`]+)`(?: with [^|]*)? \| `([^`]+)`", re.M)
_ENV = {"PY": "/usr/bin/python3", "APPDIR": "/srv/app"}


def _rows() -> list[tuple[str, str]]:
    names = DOC.read_text().split("## 5. Names", 1)[1]
    return _ROW.findall(names)


def test_the_table_has_its_examples() -> None:
    assert len(_rows()) >= 12


@pytest.mark.parametrize(("command", "name"), _rows())
def test_each_documented_name(command: str, name: str) -> None:
    assert name_lines([(naming(command, _ENV), "0 * * * *")]) == [name]
