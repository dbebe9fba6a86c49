"""Fan-out from the shell: one queue job per line of JSON, deduplicated on (kind, ref).

A legacy "process every pending order" script becomes a producer that prints one line per
order; ``migrate-cron enqueue KIND --stdin`` turns the lines into jobs, and workers run them in
parallel, each with retries of its own. The ref is the dedupe key, so feeding the same lines
twice (a producer re-run after a crash, overlapping runs) adds nothing: re-running is always
the answer to an interrupted fan-out.

Lines are read and inserted in batches (``BATCH`` rows per statement). A bad line stops the
read: the lines before it are enqueued, nothing after it, and the error names ``SOURCE:LINE``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from migrate_cron.errors import DatabaseUnavailable, UsageError

if TYPE_CHECKING:
    from migrate_cron.store import Store

BATCH = 1000
REF_MAX = 255
KIND_MAX = 200
_FIELDS = frozenset({"ref", "payload", "run_at"})


@dataclass(frozen=True, slots=True)
class Item:
    ref: str
    payload: Any
    run_at: datetime | None


@dataclass(frozen=True)
class FanOutResult:
    """``lines`` read (blank lines not counted), ``created`` new jobs; the rest existed."""

    lines: int
    created: int

    @property
    def existing(self) -> int:
        return self.lines - self.created


class BadLine(UsageError):
    """A line that is not a job; ``done`` says what was enqueued before it."""

    def __init__(self, where: str, reason: str, done: FanOutResult) -> None:
        self.done = done
        super().__init__(
            f"{where}: {reason}; the {done.lines} line(s) before it are enqueued "
            f"({done.created} new job(s)), nothing after it — fix the line and feed the whole "
            "input again (refs already enqueued are skipped)"
        )


class Interrupted(DatabaseUnavailable):
    """The database went away mid-way; ``done`` says what was enqueued before."""

    def __init__(self, reason: str, done: FanOutResult) -> None:
        self.done = done
        super().__init__(
            f"{reason}; the first {done.lines} line(s) are enqueued ({done.created} new "
            "job(s)), the rest not — feed the whole input again when it is back (refs already "
            "enqueued are skipped)"
        )


def check_kind(kind: str) -> str:
    if not kind or len(kind) > KIND_MAX:
        raise UsageError(f"a job kind needs 1 to {KIND_MAX} characters")
    return kind


def check_ref(ref: str) -> str:
    if not ref or len(ref) > REF_MAX:
        raise UsageError(f"a ref needs 1 to {REF_MAX} characters, got {len(ref)}")
    return ref


def parse_time(text: str) -> datetime:
    """ISO 8601; without an offset it is UTC (a queue-only kind has no timezone of its own)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{text!r} is not an ISO 8601 time (e.g. 2026-03-01T02:30:00Z)") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def parse_line(text: str) -> Item:
    """One ``{"ref": …, "payload": …, "run_at": …}`` object; raises ValueError saying why not."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError('not a JSON object (expected {"ref": ..., "payload": ...})')
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)} (known: payload, ref, run_at)")
    ref = data.get("ref")
    if isinstance(ref, int) and not isinstance(ref, bool):
        ref = str(ref)
    if not isinstance(ref, str) or not ref or len(ref) > REF_MAX:
        raise ValueError(f'"ref" must be a string of 1 to {REF_MAX} characters')
    run_at = data.get("run_at")
    if run_at is not None and not isinstance(run_at, str):
        raise ValueError('"run_at" must be an ISO 8601 string')
    try:
        when = parse_time(run_at) if run_at is not None else None
    except UsageError as exc:
        raise ValueError(f'"run_at": {exc}') from None
    return Item(ref, data.get("payload"), when)


def _items(lines: Iterable[str], source: str) -> Iterator[tuple[int, Item | str]]:
    """(line number, item) per non-blank line, or (line number, reason) for a bad one."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            yield number, parse_line(text)
        except ValueError as exc:
            yield number, str(exc)


def fan_out(
    store: Store,
    kind: str,
    lines: Iterable[str],
    *,
    source: str = "<stdin>",
    max_attempts: int = 5,
    batch: int = BATCH,
) -> FanOutResult:
    """Enqueue one ``kind`` job per line, ``batch`` lines per statement and transaction."""
    check_kind(kind)
    read = created = 0
    pending: list[tuple[str, Any, datetime | None]] = []

    def flush() -> None:
        nonlocal read, created
        if pending:
            try:
                created += store.enqueue_refs(kind, pending, max_attempts=max_attempts, chunk=batch)
            except DatabaseUnavailable as exc:
                raise Interrupted(str(exc), FanOutResult(read, created)) from None
            read += len(pending)
            pending.clear()

    for number, item in _items(lines, source):
        if isinstance(item, str):
            flush()
            raise BadLine(f"{source}:{number}", item, FanOutResult(read, created))
        pending.append((item.ref, item.payload, item.run_at))
        if len(pending) >= batch:
            flush()
    flush()
    return FanOutResult(read, created)
