"""The new ``[jobs.NAME]`` entries of one merge, kept as text until the registry is written.

An entry built as a tomlkit table weighs ~30 KB of Python objects (each key, value, comment
and its whitespace is an object, several in reference cycles), so a 100,000-line crontab held
3 GB of tables until the document was written out at the end. New entries are written as
text instead (``entry_text``); the registry's text is the document — the entries that were
already there, with their edits — rendered once by tomlkit, with the new entries' text in the
place tomlkit would have rendered them.

That place, and what tomlkit puts before an entry (a blank line, or nothing), depend on the
document: two empty marker tables are appended to ``[jobs]`` where the first new entry would
have gone, and where and how their headers render says where the text goes and what precedes
each entry. If the markers do not render as expected (a ``jobs`` key written in quotes, say),
``render`` returns None and the caller builds the entries as tables instead.
"""

from __future__ import annotations

import uuid

import tomlkit
from tomlkit.items import Table


class AppendedEntries:
    """New entries appended, in order, to the ``jobs`` super table of a document."""

    def __init__(self, jobs: Table) -> None:
        self._jobs = jobs
        self._texts: list[str] = []
        marker = f"migrate-cron-appended-{uuid.uuid4().hex}"
        self._first, self._second = f"{marker}-a", f"{marker}-b"

    def add(self, text: str) -> None:
        """Append one entry's text (``[jobs.NAME]`` first, ending with a newline)."""
        if not self._texts:
            self._jobs.append(self._first, tomlkit.table())
            self._jobs.append(self._second, tomlkit.table())
        self._texts.append(text)

    def render(self, doc: tomlkit.TOMLDocument) -> str | None:
        """The document's text with the entries in place, or None when the markers did not
        render as expected (then where the entries go is not known)."""
        text = tomlkit.dumps(doc)
        if not self._texts:
            return text
        first, second = f"[jobs.{self._first}]\n", f"[jobs.{self._second}]\n"
        start = text.find(first)
        end = text.find(second, start + 1)
        if start < 0 or end < 0 or text.count(first) != 1 or text.count(second) != 1:
            return None
        # What tomlkit puts before an entry that follows another one: a blank line, or not.
        between = text[start + len(first) : end]
        if between not in ("", "\n") or not all(t.endswith("\n") for t in self._texts):
            return None
        parts = [text[:start]]
        for i, entry in enumerate(self._texts):
            parts.extend((between, entry) if i else (entry,))
        parts.append(text[end + len(second) :])
        return "".join(parts)  # one copy of the whole text, not one per concatenation
