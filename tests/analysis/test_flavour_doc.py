"""docs/cron-flavours.md promises, per rule, the test that holds it: every numbered row names
at least one test, and every test it names exists (a renamed test would leave the page lying)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_flavour_rule_names_tests_that_exist() -> None:
    page = (ROOT / "docs" / "cron-flavours.md").read_text()
    rows = [line for line in page.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(rows) >= 10
    defined = {
        name
        for path in (ROOT / "tests").rglob("test_*.py")
        for name in re.findall(r"^def (test_\w+)", path.read_text(), re.M)
    }
    for row in rows:
        named = re.findall(r"`(test_\w+)`", row.rsplit("|", 2)[-2])
        assert named, row[:60]
        assert set(named) <= defined, (row[:60], set(named) - defined)
