"""Reading ``analyze``'s human output back in tests: which lines each finding kind names."""

from __future__ import annotations

import re

_RUN = re.compile(r"(\d+)(?:-(\d+))?")


def kinds_said(output: str, name: str) -> dict[str, set[int]]:
    """Per rule, the line numbers its paragraph names for the file ``name`` ("poll — shop.cron
    lines 3, 5, 9-12" gives ``{"poll": {3, 5, 9, 10, 11, 12}}``; "the whole file" is line 0)."""
    flat = re.sub(r"\s+", " ", output)
    heading = re.compile(
        rf"(\S+) — (?:[^ ;]*/)?{re.escape(name)} "
        r"(the whole file)?(?: and )?(?:lines? ((?:\d+(?:-\d+)?(?:, )?)+))?"
    )
    said: dict[str, set[int]] = {}
    for match in heading.finditer(flat):
        lines = said.setdefault(match.group(1), set())
        if match.group(2):
            lines.add(0)
        for low, high in _RUN.findall(match.group(3) or ""):
            lines.update(range(int(low), int(high or low) + 1))
    return said
