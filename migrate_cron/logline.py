"""One log line format for every long-running process (worker, scheduler, metrics).

``2026-03-01T02:30:00.123Z EVENT message key=value key="value with spaces"`` — values with a
space, a quote or ``=`` are JSON-quoted, so a value can never forge another field or line; with
``--json-logs`` the same fields as one JSON object per line.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

_PLAIN = re.compile(r"[^\s\"=]+")


def timestamp() -> str:
    """Now, UTC, milliseconds, with ``Z`` (``time.strftime``: a datetime's ``isoformat`` and
    ``replace`` cost more, twice per job in the worker's log)."""
    now = time.time()
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now))}.{int(now * 1000) % 1000:03d}Z"


class Stamps:
    """``timestamp`` for a stream of lines: the date and time to the second formatted once per
    second (a worker writes two lines per job, thousands a second). Safe across threads: the
    second and its text are replaced together, as one tuple."""

    __slots__ = ("_second",)

    def __init__(self) -> None:
        self._second: tuple[int, str] = (-1, "")

    def now(self) -> str:
        now = time.time()
        second = int(now)
        known, text = self._second
        if second != known:
            text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = (second, text)
        return f"{text}.{int(now * 1000) % 1000:03d}Z"


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


#: The loggers of the libraries under a long-running process whose warnings it writes into
#: its own log: the store's (``store/reset.py``) and SQLAlchemy's (its pool logs an error with
#: the whole traceback when it cannot reset a connection the server closed). The caller adds
#: the drivers' (``store.dialects.driver_loggers``): psycopg warns "error ignored terminating
#: <Pipeline …>" when the server goes away inside a pipeline, and without a handler Python's
#: last resort wrote it bare to stderr.
LIBRARY_LOGGERS = ("migrate_cron.store", "sqlalchemy")
#: The event their lines carry.
LIBRARY_EVENT = "db-connection"


class _EventLines(logging.Handler):
    """A log record as one event line of the process's own log: the message, and the
    exception's first line instead of its traceback."""

    def __init__(self, event: Callable[[str, str], None]) -> None:
        super().__init__(logging.WARNING)
        self._event = event

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            exc = record.exc_info[1] if record.exc_info else None
            if exc is not None:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                message = f"{message}: {type(exc).__name__}: {first}"[:500]
            if not record.name.startswith("migrate_cron"):
                message = f"{record.name}: {message}"
            self._event(LIBRARY_EVENT, message)
        except Exception:
            self.handleError(record)


def route_library_logs(event: Callable[[str, str], None], more: Iterable[str] = ()) -> None:
    """Send the warnings of ``LIBRARY_LOGGERS`` and of the loggers named in ``more`` to
    ``event`` (a log's ``event(name, message)``), and nowhere else: a user's log gets one
    line, never a traceback."""
    handler = _EventLines(event)
    for name in (*LIBRARY_LOGGERS, *more):
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if isinstance(h, _EventLines)]:
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.propagate = False
