"""One log line format for every long-running process (worker, scheduler, metrics).

``2026-03-01T02:30:00.123Z EVENT message key=value key="value with spaces"`` — values with a
space, a quote or ``=`` are JSON-quoted, so a value can never forge another field or line; with
``--json-logs`` the same fields as one JSON object per line.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

_PLAIN = re.compile(r"[^\s\"=]+")


def timestamp() -> str:
    """Now, UTC, milliseconds, with ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def quote(text: str) -> str:
    """A value as is when it has no space, quote or '='; else JSON-quoted."""
    return text if _PLAIN.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def format_line(event: str, fields: dict[str, Any], *, json_lines: bool) -> str:
    """The line for ``event`` with ``fields`` (``message`` is written bare after the event)."""
    ts = timestamp()
    if json_lines:
        return json.dumps({"ts": ts, "event": event, **fields}, default=str)
    fields = dict(fields)
    message = fields.pop("message", None)
    parts = [ts, event]
    if message:
        parts.append(str(message))
    parts.extend(f"{k}={quote(str(v))}" for k, v in fields.items())
    return " ".join(parts)
