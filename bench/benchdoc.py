"""docs/benchmarks.md is written by several bench scripts, each owning one ``## name``
section: a re-run replaces its own section and leaves the others' numbers alone."""

from __future__ import annotations

import os
import re
import subprocess
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


def machine() -> str:
    """The CPU model and count, as a benchmark's section names them (from ``lscpu``)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in out.splitlines()
            if line.startswith("Model name")
        ),
        "unknown CPU",
    )
    return f"{model}, {os.cpu_count()} CPUs (shared with other work while measuring)"
