"""One job's tables found in the registry's text, without parsing the rest of it.

cron fires ``migrate-cron enqueue NAME`` every minute for every migrated line on every host,
and that call needs one entry. Parsing a generated registry of 10,000 jobs (6 MB) into
objects costs ~0.7 s, of 100,000 jobs 7.4 s and 630 MB — per call. Here the bytes are
searched instead: every occurrence of NAME (a C-speed ``find``) is checked for being a table
header ``[jobs.NAME…]`` / ``[[jobs.NAME.…]]`` in any spelling TOML allows (``[ jobs . "a.b" ]``,
``'…'``, a trailing comment), and so is ``defaults``; those tables alone are cut out and given
to ``tomllib``. A 10,000-job registry then costs a few ms more than a 10-job one
(docs/benchmarks.md).

The scan only ever says "here are the tables" or "I cannot be sure" (``None``); the caller then
parses the whole file, as before. It cannot be sure when:

- the file has key/values before its first table (``jobs.NAME.command = …`` or ``jobs = {…}``
  would define the job there);
- NAME is written as (part of) a key rather than a table header (``NAME = { … }`` or
  ``NAME.command = …`` under ``[jobs]``), or a header spells it with escapes
  (``[jobs."b\\u0061ckup"]``);
- a header of the job sits inside a multi-line string (found by lexing only the lines that
  hold a triple quote), or the job's own tables do not parse once cut out (a cut inside a
  multi-line value).

It reads the file through ``mmap``: the pages are the page cache's, so a large registry does
not grow the process. Bytes only, no import of ours: ``registry.loader`` builds the entry.
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_KEY = rb"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
#: A table header line: ``[a.b]`` or ``[[a.b]]``, any blanks around keys and dots, a comment.
_HEADER = re.compile(
    rb"[ \t]*(\[\[?)[ \t]*(" + _KEY + rb"(?:[ \t]*\.[ \t]*" + _KEY + rb")*)[ \t]*(\]\]?)"
    rb"[ \t]*(?:#[^\n]*)?\r?(?:\n|\Z)"
)
_KEY_PART = re.compile(_KEY)
#: The start of the next line that opens with ``[`` (a header, or an array's element).
_BRACKET_LINE = re.compile(rb"\n[ \t]*\[")
#: Lines that are blank or comments only (what may stand before the first table).
_NOTHING = re.compile(rb"(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]*(?:#[^\n]*)?")
#: A key part at the start of a line up to where a key component begins.
_KEY_PREFIX = re.compile(rb"[ \t]*(?:" + _KEY + rb"[ \t]*\.[ \t]*)*[\"']?")
#: Searched apart: one alternation of the two scans a file 40x slower than each literal.
_TRIPLES = (re.compile(rb'"""'), re.compile(rb"'''"))
#: Tokens of one line outside strings: triple quotes first, then whole one-line strings, a
#: lone quote (an unterminated string), a comment, the end of the line.
_TOKEN = re.compile(rb"""\"\"\"|'''|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|["']|#|\n""")
#: Occurrences of a name worth checking one by one; more (a one-letter name) and the whole
#: file is parsed instead.
MAX_OCCURRENCES = 2000


@dataclass(frozen=True)
class Table:
    """One table header of the job (or of [defaults]) and the text it owns."""

    start: int  # offset of the header line
    end: int  # offset where the next header line starts (or the end of the file)
    keys: tuple[str, ...]  # the header's key path, e.g. ("jobs", "x", "source")


@dataclass(frozen=True)
class Found:
    """The tables of one job and of ``[defaults]``, in file order, and the file's bytes."""

    data: bytes | mmap.mmap
    job: tuple[Table, ...]
    defaults: tuple[Table, ...]

    def text(self) -> str | None:
        """The defaults' and the job's tables as one TOML text (None: not UTF-8)."""
        parts = [bytes(self.data[t.start : t.end]) for t in (*self.defaults, *self.job)]
        try:
            return b"\n".join(parts).decode("utf-8")
        except UnicodeDecodeError:
            return None

    def line_of(self, key: str | None) -> int | None:
        """The file's line number where the job sets ``key`` (its own line, or the header of
        ``[jobs.NAME.KEY]``), else the job's first header; None if it has none."""
        at = _offset_of(self.data, self.job, key)
        return None if at is None else lines_at(self.data, [at])[at]


def _offset_of(data: bytes | mmap.mmap, job: Sequence[Table], key: str | None) -> int | None:
    if not job:
        return None
    if key is not None:
        for t in job:
            if len(t.keys) > 2 and t.keys[2] == key:
                return t.start
        at = _key_line(data, job, key)
        if at is not None:
            return at
    return job[0].start


def _key_line(data: bytes | mmap.mmap, tables: Sequence[Table], key: str) -> int | None:
    """Offset of the first line of ``tables`` that sets ``key`` (bare or quoted)."""
    k = re.escape(key.encode())
    pattern = re.compile(rb"^[ \t]*(?:" + k + rb'|"' + k + rb'"|\'' + k + rb"')[ \t]*[.=]", re.M)
    for t in tables:
        m = pattern.search(data, t.start, t.end)
        if m is not None:
            return m.start()
    return None


def lines_at(data: bytes | mmap.mmap, offsets: Sequence[int]) -> dict[int, int]:
    """The 1-based line of each offset, counted in one pass (only asked for errors)."""
    out: dict[int, int] = {}
    line, last = 1, 0
    for at in sorted(offsets):
        line += bytes(data[last:at]).count(b"\n")
        out[at], last = line, at
    return out


def entry_lines(data: bytes | mmap.mmap, wanted: Mapping[str, str | None]) -> dict[str, int]:
    """For each job name in ``wanted`` (name → the key its error names), the line where its
    entry sets that key, else its first header line: one pass over the file's headers, so a
    registry with many bad entries still loads in the time of one parse."""
    triples = _multiline_spans(data) or []
    tables: dict[str, list[Table]] = {}
    jobs_tables: list[Table] = []  # [jobs] itself: entries written as keys (x = { … })
    pos = _first_header(data, triples)
    while pos < len(data):
        m = _HEADER.match(data, pos)
        end = _next_header(data, m.end(), triples) if m else len(data)
        keys = _keys(m.group(2)) if m else None
        if keys == ("jobs",):
            jobs_tables.append(Table(pos, end, keys))
        elif keys is not None and len(keys) > 1 and keys[0] == "jobs" and keys[1] in wanted:
            tables.setdefault(keys[1], []).append(Table(pos, end, keys))
        pos = end
    offsets = {
        name: at
        for name in wanted
        if (at := _offset_of(data, tables.get(name, ()), wanted[name])) is not None
        or (at := _key_line(data, jobs_tables, name)) is not None
    }
    lines = lines_at(data, list(offsets.values()))
    return {name: lines[at] for name, at in offsets.items()}


def open_bytes(path: str | os.PathLike[str]) -> bytes | mmap.mmap:
    """The file's bytes, mapped (an empty file is ``b""``: mmap cannot map it)."""
    with open(path, "rb") as f:
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            return f.read()


def find_job(data: bytes | mmap.mmap, name: str) -> Found | None:
    """The tables of job ``name`` and of ``[defaults]``; ``None`` when the scan cannot be
    sure (see the module's docstring) — the whole file must be parsed then. A job with no
    table here is ``Found`` with ``job == ()`` only when the file is plain enough to be sure
    it has none."""
    triples = _multiline_spans(data)
    if triples is None:
        return None
    first = _first_header(data, triples)
    if not _NOTHING.fullmatch(data, 0, first):
        return None  # key/values at the top level: they may define jobs or defaults
    job = _tables(data, name, ("jobs", name), triples, key_side=True)
    defaults = _tables(data, "defaults", ("defaults",), triples, key_side=False)
    if job is None or defaults is None:
        return None
    return Found(data, job, defaults)


def _tables(
    data: bytes | mmap.mmap,
    word: str,
    prefix: tuple[str, ...],
    triples: Sequence[tuple[int, int]],
    *,
    key_side: bool,
) -> tuple[Table, ...] | None:
    """Every header whose key path starts with ``prefix``, found from the occurrences of
    ``word``; None when one of them cannot be read for sure (``key_side``: ``word`` written
    as a key of a key/value line)."""
    needle = word.encode()
    tables: list[Table] = []
    seen: set[int] = set()
    at = data.find(needle)
    count = 0
    while at != -1:
        count += 1
        if count > MAX_OCCURRENCES:
            return None
        start = data.rfind(b"\n", 0, at) + 1
        if start not in seen and not _inside(triples, start):  # not a multi-line string's
            seen.add(start)
            verdict = _classify(data, start, at, needle, prefix, key_side, triples)
            if verdict is None:
                return None
            if isinstance(verdict, Table):
                tables.append(verdict)
        at = data.find(needle, at + len(needle))
    return tuple(sorted(tables, key=lambda t: t.start))


def _classify(
    data: bytes | mmap.mmap,
    start: int,
    at: int,
    needle: bytes,
    prefix: tuple[str, ...],
    key_side: bool,
    triples: Sequence[tuple[int, int]],
) -> Table | bool | None:
    """The line at ``start`` holding ``needle`` at ``at``: our table (a ``Table``), not ours
    (False), or not sure (None)."""
    m = _HEADER.match(data, start)
    if m is not None and m.end() > at:
        if len(m.group(1)) != len(m.group(3)):
            return False  # "[a]]" is no header: tomllib refuses the file anyway
        keys = _keys(m.group(2))
        if keys is None:
            return None  # escapes in a quoted key: only a parser can compare it
        if keys[: len(prefix)] != prefix:
            return False
        if len(m.group(1)) == 2 and len(keys) == len(prefix):
            return None  # [[jobs.NAME]] / [[defaults]]: an array, not a table
        return Table(start, _next_header(data, m.end(), triples, any_bracket=True), keys)
    if key_side and _KEY_PREFIX.fullmatch(data, start, at):
        after = data[at + len(needle) : at + len(needle) + 3]
        if re.match(rb"[\"']?[ \t]*[.=]", after):
            return None  # NAME = {…} or NAME.key = … : defined by keys, not by a header
    return False


def _keys(raw: bytes) -> tuple[str, ...] | None:
    out = []
    for m in _KEY_PART.finditer(raw):
        key = m.group(0)
        if key[:1] == b'"':
            if b"\\" in key:
                return None
            key = key[1:-1]
        elif key[:1] == b"'":
            key = key[1:-1]
        try:
            out.append(key.decode("utf-8"))
        except UnicodeDecodeError:
            return None
    return tuple(out)


def _next_header(
    data: bytes | mmap.mmap,
    pos: int,
    triples: Sequence[tuple[int, int]],
    *,
    any_bracket: bool = False,
) -> int:
    """Where the next header line starts (an array's element line, or a line inside a
    multi-line string, is passed over). ``any_bracket``: where the next line opening with
    ``[`` outside a multi-line string starts — for a job's cut, so that another entry's
    broken header (``[jobs.b`` without its ``]``) ends this job's tables instead of making
    them unparseable. A cut ended at an array's element line leaves that array open: it
    never parses, and the whole file is read instead, as before."""
    while True:
        m = _BRACKET_LINE.search(data, pos - 1 if pos else 0)
        if m is None:
            return len(data)
        line = m.start() + 1
        if (any_bracket or _HEADER.match(data, line)) and not _inside(triples, line):
            return line
        pos = m.end()


def _first_header(data: bytes | mmap.mmap, triples: Sequence[tuple[int, int]]) -> int:
    pos = 0
    while True:
        if _HEADER.match(data, pos) and not _inside(triples, pos):
            return pos
        m = _BRACKET_LINE.search(data, pos)
        if m is None:
            return len(data)
        pos = m.start() + 1


def _inside(spans: Sequence[tuple[int, int]], pos: int) -> bool:
    """Whether ``pos`` lies inside one of the (sorted, disjoint) multi-line strings."""
    i = bisect.bisect_right(spans, (pos, 1 << 62)) - 1
    return i >= 0 and spans[i][0] < pos < spans[i][1]


def _multiline_spans(data: bytes | mmap.mmap) -> list[tuple[int, int]] | None:
    """(start, end) of every multi-line string; None when one is not closed (the parser will
    say where). Only lines holding a triple quote are lexed, from the line's start (or from
    the end of the string before): a triple quote inside a one-line string or a comment
    opens nothing."""
    spans: list[tuple[int, int]] = []
    ahead: list[int | None] = [-1, -1]  # the next occurrence of each delimiter (None: none)
    pos = 0
    while True:
        for i, pattern in enumerate(_TRIPLES):
            seen = ahead[i]
            if seen is not None and seen < pos:
                m = pattern.search(data, pos)
                ahead[i] = None if m is None else m.start()
        found = [a for a in ahead if a is not None]
        if not found:
            return spans
        first = min(found)
        line_start = data.rfind(b"\n", 0, first) + 1
        opener = _opener(data, max(line_start, pos))
        if opener is None:
            nl = data.find(b"\n", first + 3)
            pos = len(data) if nl == -1 else nl + 1
            continue
        if opener == -1:
            return None
        delim = bytes(data[opener : opener + 3])
        end = _closing(data, opener + 3, delim)
        if end is None:
            return None
        spans.append((opener, end))
        pos = end


def _opener(data: bytes | mmap.mmap, pos: int) -> int | None:
    """Offset of the first multi-line string opening on the line from ``pos``; None if none
    opens there; -1 for an unterminated one-line string (not sure)."""
    while True:
        t = _TOKEN.search(data, pos)
        if t is None:
            return None
        tok = t.group(0)
        if tok in (b'"""', b"'''"):
            return t.start()
        if tok in (b"\n", b"#"):
            return None
        if tok in (b'"', b"'"):
            return -1
        pos = t.end()


def _closing(data: bytes | mmap.mmap, pos: int, delim: bytes) -> int | None:
    """Offset just past the delimiter that closes a multi-line string opened before ``pos``
    (up to two more quotes belong to the string, as TOML says)."""
    while True:
        at = data.find(delim, pos)
        if at == -1:
            return None
        if delim == b'"""':
            slashes = 0
            while at - slashes - 1 >= pos and data[at - slashes - 1] == 0x5C:  # backslash
                slashes += 1
            if slashes % 2:
                pos = at + 1
                continue
        end = at + 3
        extra = 0
        while extra < 2 and data[end : end + 1] == delim[:1]:
            end += 1
            extra += 1
        return end
