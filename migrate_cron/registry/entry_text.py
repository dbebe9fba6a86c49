"""A new registry entry as TOML text, written directly: the text tomlkit renders for the
table ``registry.entry_tables`` would build for it (``new_entry``), without building it.

A tomlkit table costs ~60 objects per entry that hold reference cycles (freed only by the
collector) and ~400 µs; ``generate registry`` on a 100,000-line crontab spent half its time
building and freeing them. Each value is still rendered by tomlkit (``tomlkit.item``,
``tomlkit.key``, ``tomlkit.comment``: the same escaping, the same errors); only the layout —
one ``key = value`` per line, the comments under the header, a blank line before each
``[jobs.NAME.source]`` or ``[[jobs.NAME.sources]]`` — is spelled here, and
``tests/registry/test_entry_text.py`` holds it equal to tomlkit's on generated entries.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import tomlkit

if TYPE_CHECKING:
    from migrate_cron.registry.proposal import GeneratedJob
    from migrate_cron.registry.spec import Source


def entry_text(name: str, g: GeneratedJob, stored: Callable[[str], str]) -> str:
    """``[jobs.NAME]`` with ``g``'s keys, comments and origins, ending with a newline;
    ``stored`` gives a crontab path as the registry writes it."""
    prefix = f"jobs.{_key(name)}"
    parts = [f"[{prefix}]\n"]
    if g.note:
        parts.extend(tomlkit.comment(line).as_string() for line in g.note.splitlines())
    parts.extend(_lines(_entry_values(g)))
    if len(g.sources) == 1:
        parts.append(f"\n[{prefix}.source]\n")
        parts.extend(_lines(_source_values(g.source, stored)))
    else:
        for src in g.sources:
            parts.append(f"\n[[{prefix}.sources]]\n")
            parts.extend(_lines(_source_values(src, stored)))
    return "".join(parts)


def _entry_values(g: GeneratedJob) -> list[tuple[str, object]]:
    """The entry's keys in the order ``_fill`` sets them, then ``mode``; None is left out."""
    values = (
        ("schedule", g.schedule),
        ("timezone", g.timezone),
        ("command", g.command),
        ("shell", g.shell),
        ("user", g.user),
        ("env", _InlineTable(g.env)),
        ("cwd", g.cwd),
        ("cwd_fallback", g.cwd_fallback),
        ("stdin", g.stdin),
        ("policy", g.policy),
        ("concurrency", g.concurrency),
        ("overlap", g.overlap),
        ("mode", "cron"),
    )
    return [(key, value) for key, value in values if value is not None]


def _source_values(src: Source, stored: Callable[[str], str]) -> list[tuple[str, object]]:
    """An origin's keys in the order ``_source_table`` sets them; None is left out."""
    values = (
        ("file", stored(src.file)),
        ("line", src.line),
        ("text", src.text),
        ("user", src.user),
        ("host", src.host),
    )
    return [(key, value) for key, value in values if value is not None]


class _InlineTable(dict[str, str]):
    """Env values: rendered ``{K = "v", …}`` in their order, ``{}`` when there are none."""


def _lines(values: Iterable[tuple[str, object]]) -> Iterator[str]:
    for key, value in values:
        yield f"{_key(key)} = {_value(value)}\n"


def _value(value: object) -> str:
    if isinstance(value, _InlineTable):
        inner = ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items())
        return f"{{{inner}}}"
    return tomlkit.item(value).as_string()


#: The characters of a bare key (tomlkit quotes any other key, as TOML requires).
_BARE = frozenset(string.ascii_letters + string.digits + "-_")


def _key(key: str) -> str:
    """A key as tomlkit writes it. A bare key is written as it is without asking tomlkit:
    its key objects hold a reference cycle each, left to the (paused) collector."""
    if key and _BARE.issuperset(key):
        return key
    return tomlkit.key(key).as_string()
