"""Text from a crontab made safe to print on a terminal.

A crontab is read byte for byte (undecodable bytes survive as surrogates) and a command may
hold anything: an ESC that starts a colour or retitles the window, a carriage return that
overwrites what came before it, a right-to-left override that makes a command read backwards.
Printed raw, the report would lie about the line or act on the operator's terminal. Every
string of the file that the human output prints goes through :func:`printable`: what is not
printable is shown as a Python-style escape (``\\x1b``, ``\\u202e``); an undecodable byte as
the byte (``\\xe9``). Tabs stay (the table expands them). ``--json`` keeps the text as read.
"""

from __future__ import annotations

_KEEP = "\t"


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (or could not show) escaped."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in _KEEP else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
