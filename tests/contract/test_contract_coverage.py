"""Every public ``Store`` operation has a case in the contract suite.

The contract suite is what makes a new dialect trustworthy: an operation without a case there
could differ per backend unnoticed. This test reads the suite's source and fails, naming the
operation, when one is never called in it.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from migrate_cron.store import Store
from migrate_cron.store.base import StoreBase

CONTRACT = Path(__file__).parent
# Plumbing of the base, not operations: hooks and helpers every operation goes through.
OPERATIONS_OF_THE_BASE = {"listener", "db_now"}


def public_operations() -> set[str]:
    """Public methods of ``Store`` defined by its operation modules (plus the base's few
    operations); the base's hooks and plumbing are exercised by every case."""
    names = set()
    for name, member in inspect.getmembers(Store):
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        if hasattr(StoreBase, name) and name not in OPERATIONS_OF_THE_BASE:
            continue
        names.add(name)
    return names


def test_every_public_store_operation_has_a_contract_case() -> None:
    source = "\n".join(p.read_text() for p in sorted(CONTRACT.glob("test_*.py")))
    called = set(re.findall(r"\.(\w+)\(", source))
    missing = sorted(public_operations() - called)
    assert public_operations(), "no public Store operation found"
    assert missing == [], f"Store operations without a contract case: {missing}"
