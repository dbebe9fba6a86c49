"""Text every backend can store, whatever a job printed or raised: what goes into an output,
error or payload column passes through here (the writer never trusts a job's bytes)."""

from __future__ import annotations


def storable(text: str | None) -> str | None:
    """Text that every backend can store, whatever a job printed or raised.

    PostgreSQL rejects NUL in text; a lone surrogate (what ``os.fsdecode`` makes of a non-UTF-8
    file name) cannot be encoded as UTF-8 by any driver. NUL becomes U+FFFD and a lone
    surrogate its ``\\udcXX`` escape, so one job's bytes can never make a batch of outcomes
    unwritable (docs/reliability.md, "poison outputs").
    """
    if text is None:
        return None
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


#: Characters an ``escaped`` text keeps (its end, where errors are): ASCII, one byte each, so it
#: fits a 64 KiB TEXT column (MySQL/MariaDB) with room to spare.
ESCAPED_MAX = 60_000


def escaped(text: str | None) -> str | None:
    """``text`` as plain ASCII, which a column of any character set stores: every other
    character as its Python escape (``✓`` → ``\\u2713``; an invalid byte, which the worker
    decoded to U+FFFD, → ``\\ufffd``), NUL as ``\\x00``, cut to its last ``ESCAPED_MAX``
    characters. The last resort before an outcome is given up on: a database not yet upgraded
    to utf8mb4 columns (``latin1``, error 1366) or a text too long for its column (1406) still
    records the run as it ended, readable, instead of turning a ``done`` into a ``failed``."""
    if text is None:
        return None
    out = text.encode("ascii", "backslashreplace").decode("ascii").replace("\x00", "\\x00")
    if len(out) > ESCAPED_MAX:
        cut = len(out) - ESCAPED_MAX
        out = f"[... {cut} characters dropped]\n{out[cut:]}"
    return out
