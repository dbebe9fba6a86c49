"""Fan-out from the shell: one queue job per line of JSON, deduplicated on (kind, ref).

A legacy "process every pending order" script becomes a producer that prints one line per
order; ``migrate-cron enqueue KIND --stdin`` turns the lines into jobs, and workers run them in
parallel, each with retries of its own. The ref is the dedupe key, so feeding the same lines
twice (a producer re-run after a crash, overlapping runs) adds nothing: re-running is always
the answer to an interrupted fan-out.

Lines are read as bytes and inserted in batches (``BATCH`` lines or ``BATCH_BYTES`` per
statement, each batch its own transaction). A bad line costs only itself: it is reported as
``SOURCE:LINE: reason`` and skipped, every other line is enqueued, and the result counts the
skipped ones (the CLI then exits 65, EX_DATAERR). Bad means: not UTF-8; not a JSON object of
``ref``/``payload``/``run_at``; text no database stores (a NUL, which PostgreSQL's jsonb and
text refuse, or a lone surrogate escape such as ``\\ud800``, which is not Unicode and which no
driver encodes); a number JSON has no spelling for (``NaN``, ``1e400``); or a line over
``LINE_MAX`` bytes (MariaDB drops the connection on a statement over ``max_allowed_packet``,
which looked like an outage). The same rules hold on every backend. What the database still
refuses in a batch (``DataRefused``: a value, not the connection) is found by splitting the
batch until the refused line stands alone; the rest of the batch is enqueued. Only an outage
stops the read (``Interrupted``, exit 75: a retry can fix it).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from migrate_cron.errors import DatabaseUnavailable, DataRefused, UsageError

if TYPE_CHECKING:
    from migrate_cron.store import Store

BATCH = 1000
#: Bytes of lines per batch, beside ``BATCH`` lines: bounds the memory and each statement.
BATCH_BYTES = 4 << 20
#: Bytes one line may have (its ref, payload and run_at as JSON). A payload says which work to
#: do — an id, a few fields —, not the data itself (pass a path or a key for that): 1 MiB is
#: far above that and far below what every backend takes in one statement (MariaDB's default
#: max_allowed_packet is 16 MiB; a JSON string may grow 6x when re-encoded as ASCII escapes).
LINE_MAX = 1 << 20
REF_MAX = 255
KIND_MAX = 200
_FIELDS = frozenset({"ref", "payload", "run_at"})
#: The escapes that may spell a NUL or a lone surrogate (a pair matches too: then the walk
#: finds nothing); an escaped backslash before ``u0000`` is a harmless false alarm.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


@dataclass(frozen=True, slots=True)
class Item:
    ref: str
    payload: Any
    run_at: datetime | None


@dataclass(frozen=True, slots=True)
class Rejected:
    """A line skipped: its number and why."""

    line: int
    reason: str


@dataclass(frozen=True)
class FanOutResult:
    """``lines`` good lines read (blank lines not counted), ``created`` new jobs (the rest of
    the good lines existed), ``skipped`` bad lines."""

    lines: int
    created: int
    skipped: int = 0

    @property
    def existing(self) -> int:
        return self.lines - self.created


class Interrupted(DatabaseUnavailable):
    """The database went away mid-way; ``done`` says what was enqueued before."""

    def __init__(self, reason: str, done: FanOutResult, line: int) -> None:
        self.done = done
        skipped = f", {done.skipped} bad line(s) reported" if done.skipped else ""
        super().__init__(
            f"{reason}; before line {line}: {done.lines} line(s) enqueued ({done.created} new "
            f"job(s)){skipped}, from it on nothing — feed the whole input again when it is back "
            "(refs already enqueued are skipped)"
        )


def check_kind(kind: str) -> str:
    if not kind or len(kind) > KIND_MAX:
        raise UsageError(f"a job kind needs 1 to {KIND_MAX} characters")
    return kind


def check_ref(ref: str) -> str:
    if not ref or len(ref) > REF_MAX:
        raise UsageError(f"a ref needs 1 to {REF_MAX} characters, got {len(ref)}")
    check_text(ref, '"ref"')
    return ref


def parse_time(text: str) -> datetime:
    """ISO 8601, as UTC; without an offset it is UTC (a queue-only kind has no timezone of its
    own)."""
    try:
        value = datetime.fromisoformat(text)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except ValueError:
        raise UsageError(f"{text!r} is not an ISO 8601 time (e.g. 2026-03-01T02:30:00Z)") from None
    except OverflowError:  # 9999-12-31T23:00-05:00 is in year 10000 in UTC
        raise UsageError(f"{text!r} is out of range (years 1 to 9999 in UTC)") from None


def check_text(text: str, where: str) -> None:
    """Refuse text no backend stores: NUL, or a lone surrogate (``ValueError`` saying where)."""
    if "\x00" in text:
        raise ValueError(f"{where} holds a NUL character (\\u0000), which PostgreSQL cannot store")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise ValueError(
            f"{where} holds a lone surrogate \\u{code:04x}, which is not Unicode text"
        ) from None


def check_payload(payload: Any) -> None:
    """Every string and key of ``payload`` passes ``check_text``, every number is finite."""
    stack = [payload]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            check_text(value, '"payload"')
        elif isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f'"payload" holds the number {value}, which JSON cannot spell')
        elif isinstance(value, dict):
            for key, item in value.items():
                check_text(key, '"payload"')
                stack.append(item)
        elif isinstance(value, list):
            stack.extend(value)


def _no_constant(name: str) -> Any:
    raise ValueError(f"not JSON ({name} is not a JSON number)")


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):
        raise ValueError(f'"payload" holds the number {number}, which is out of range')
    return value


def load_json(text: str) -> Any:
    """``json.loads`` as strict as JSON itself (no ``NaN``/``Infinity``, no number that is
    one once read: ``1e400``), with a reason."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("not JSON this parser can read (nested too deeply)") from None


def parse_line(text: str) -> Item:
    """One ``{"ref": …, "payload": …, "run_at": …}`` object; raises ValueError saying why not.

    In Unicode text, NUL and lone surrogates can reach a JSON string only as ``\\u0000`` and
    ``\\ud800``–``\\udfff`` escapes (raw control characters are not JSON), so the walk over
    the payload's strings is done only for a line with such an escape: the common line costs a
    third of what walking every line did."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"not Unicode text (a lone surrogate \\u{ord(text[exc.start]):04x} at column "
            f"{exc.start + 1})"
        ) from None
    data = load_json(text)
    if not isinstance(data, dict):
        raise ValueError('not a JSON object (expected {"ref": ..., "payload": ...})')
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        shown = ", ".join(key if key.isprintable() else repr(key) for key in unknown)
        raise ValueError(f"unknown key(s) {shown} (known: payload, ref, run_at)")
    ref = data.get("ref")
    if isinstance(ref, int) and not isinstance(ref, bool):
        ref = str(ref)
    if not isinstance(ref, str) or not ref or len(ref) > REF_MAX:
        raise ValueError(f'"ref" must be a string of 1 to {REF_MAX} characters')
    escapes = _SUSPECT_ESCAPE.search(text) is not None
    if escapes:
        check_text(ref, '"ref"')
    run_at = data.get("run_at")
    if run_at is not None and not isinstance(run_at, str):
        raise ValueError('"run_at" must be an ISO 8601 string')
    try:
        when = parse_time(run_at) if run_at is not None else None
    except UsageError as exc:
        raise ValueError(f'"run_at": {exc}') from None
    if escapes:
        check_payload(data.get("payload"))
    return Item(ref, data.get("payload"), when)


def decode_line(raw: bytes | str) -> str:
    """A line's text: UTF-8, strictly (ValueError naming the first bad byte's column)."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start]
        raise ValueError(f"not UTF-8 (byte 0x{byte:02x} at column {exc.start + 1})") from None


@dataclass(frozen=True, slots=True)
class Overlong:
    """A line longer than the limit, read and dropped: only its length is kept."""

    size: int


def read_lines(stream: IO[bytes], limit: int = LINE_MAX) -> Iterator[bytes | Overlong]:
    """The lines of ``stream`` without holding more than ``limit`` bytes of any: a longer
    line is read through and yields ``Overlong`` (a 2 GB line costs no 2 GB of memory)."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or (line.endswith(b"\n") and len(line) == limit + 1):
            yield line
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = stream.readline(1 << 16)
            if not line:
                break
            size += len(line)
        yield Overlong(size - line.endswith(b"\n"))


def _items(lines: Iterable[bytes | str | Overlong]) -> Iterator[tuple[int, Item | str, int]]:
    """(line number, item or reason, bytes) per non-blank line."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, Overlong):
            yield number, f"longer than {LINE_MAX:,} bytes ({raw.size:,})", 0
            continue
        try:
            text = decode_line(raw).removesuffix("\n").removesuffix("\r")
            if not text.strip():
                continue
            size = len(raw) - (raw[-1:] in (b"\n", "\n"))
            if size > LINE_MAX:
                raise ValueError(f"longer than {LINE_MAX:,} bytes ({size:,})")
            yield number, parse_line(text), size
        except ValueError as exc:
            yield number, str(exc), 0


Row = tuple[str, Any, datetime | None]


def fan_out(
    store: Store,
    kind: str,
    lines: Iterable[bytes | str | Overlong],
    *,
    max_attempts: int = 5,
    batch: int = BATCH,
    report: Callable[[Rejected], None] | None = None,
) -> FanOutResult:
    """Enqueue one ``kind`` job per good line, ``batch`` lines per statement and transaction;
    each bad line goes to ``report`` and is skipped. ``lines``: bytes (what ``read_lines``
    gives; decoded here, strictly) or text."""
    check_kind(kind)
    read = created = skipped = 0
    pending: list[tuple[int, Row]] = []
    pending_bytes = 0

    def reject(rejected: Rejected) -> None:
        nonlocal skipped
        skipped += 1
        if report is not None:
            report(rejected)

    def flush() -> None:
        nonlocal read, created, pending_bytes
        if not pending:
            return
        try:
            new, refused = _insert(store, kind, pending, max_attempts)
        except DatabaseUnavailable as exc:
            done = FanOutResult(read, created, skipped)
            raise Interrupted(str(exc), done, pending[0][0]) from None
        for rejected in refused:
            reject(rejected)
        created += new
        read += len(pending) - len(refused)
        pending.clear()
        pending_bytes = 0

    for number, item, size in _items(lines):
        if isinstance(item, str):
            reject(Rejected(number, item))
            continue
        pending.append((number, (item.ref, item.payload, item.run_at)))
        pending_bytes += size
        if len(pending) >= batch or pending_bytes >= BATCH_BYTES:
            flush()
    flush()
    return FanOutResult(read, created, skipped)


def _insert(
    store: Store, kind: str, rows: list[tuple[int, Row]], max_attempts: int
) -> tuple[int, list[Rejected]]:
    """Insert ``rows``; when the database refuses the batch for a value (not an outage), the
    halves are tried apart until each refused line stands alone. Returns (new jobs, refused)."""
    try:
        items = [row for _, row in rows]
        return store.enqueue_refs(kind, items, max_attempts=max_attempts, chunk=len(items)), []
    except DataRefused as exc:
        if len(rows) == 1:
            return 0, [Rejected(rows[0][0], f"the database refused it: {exc}")]
    half = len(rows) // 2
    first, refused_first = _insert(store, kind, rows[:half], max_attempts)
    second, refused_second = _insert(store, kind, rows[half:], max_attempts)
    return first + second, refused_first + refused_second
