from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from migrate_cron.registry.naming import registry_name, unique_name


def test_unique_name_adds_the_first_free_suffix() -> None:
    assert unique_name("export", []) == "export"
    assert unique_name("export", ["export"]) == "export-2"
    assert unique_name("export", ["export", "export-2", "export-3"]) == "export-4"


def test_registry_name_cleans_and_dedupes() -> None:
    assert registry_name("Invoices:Export", []) == "invoices-export"
    assert registry_name("$(rm -rf /)`x`'\"%\n", []) == "rm-rf-x"
    assert registry_name("", ["job"]) == "job-2"


@given(st.text(max_size=200), st.lists(st.text(max_size=20), max_size=5))
def test_any_suggestion_gives_a_shell_and_toml_safe_unique_name(
    suggested: str, taken: list[str]
) -> None:
    name = registry_name(suggested, taken)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
    assert name not in taken
