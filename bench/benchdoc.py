"""docs/benchmarks.md is written by several bench scripts, each owning one ``## name``
section: a re-run replaces its own section and leaves the others' numbers alone."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def replace_section(name: str, section: str) -> None:
    """Put ``section`` (which starts with ``## name``) in place of the old one, or append it."""
    DOC.parent.mkdir(exist_ok=True)
    current = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    body = section.rstrip("\n") + "\n"
    pattern = re.compile(rf"^## {re.escape(name)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(current):
        current = pattern.sub(lambda _: body + "\n", current)
    else:
        current = current.rstrip("\n") + "\n\n" + body
    DOC.write_text(current.rstrip("\n") + "\n")
