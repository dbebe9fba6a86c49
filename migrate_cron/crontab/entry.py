"""What a crontab file is made of: one value per physical line, kept byte for byte.

Text is decoded as UTF-8 with ``surrogateescape``, so any byte sequence survives a round trip:
``"".join(line.raw for line in file.lines).encode("utf-8", "surrogateescape")`` is the file.
Another layer rewrites single lines (``migrate`` / ``rollback``) by number using ``raw``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

ENCODING = "utf-8"
ERRORS = "surrogateescape"


class Kind(StrEnum):
    JOB = "job"
    ENV = "env"
    COMMENT = "comment"
    BLANK = "blank"
    INVALID = "invalid"


class Severity(StrEnum):
    """Ordered: info < warning < error (``Severity.rank``)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


@dataclass(frozen=True, slots=True)
class Problem:
    """Something the parser noticed on a line: why it is invalid, or a warning about it.

    ``column`` is 1-based (characters) and points at the offending token when there is one.
    """

    code: str
    message: str
    severity: Severity = Severity.ERROR
    column: int | None = None
    field: str | None = None


@dataclass(frozen=True, slots=True)
class CrontabLine:
    """One physical line of a crontab file.

    For ``kind == JOB``: ``schedule`` is the time fields as written (single-spaced, or the
    @macro), ``user`` the sixth field in system crontabs, ``command`` the text cron keeps up to
    the first unescaped ``%`` (byte-exact, trailing blanks included), ``stdin`` what follows it
    as cron feeds it to the command (``%`` → newline, ``\\%`` → ``%``; None when there is no
    ``%``), ``env`` the assignments above the line in file order (never expanded) and
    ``timezone`` the CRON_TZ (or TZ) in effect, None meaning the host's zone.
    For ``kind == ENV``: ``env_name`` and ``env_value`` (quotes stripped).
    """

    file: str
    number: int
    raw: str
    kind: Kind
    schedule: str | None = None
    user: str | None = None
    command: str | None = None
    stdin: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    timezone: str | None = None
    env_name: str | None = None
    env_value: str | None = None
    problems: tuple[Problem, ...] = ()

    @property
    def text(self) -> str:
        """The line without its line ending."""
        return self.raw[:-1] if self.raw.endswith("\n") else self.raw

    @property
    def raw_bytes(self) -> bytes:
        return self.raw.encode(ENCODING, ERRORS)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.number}"

    @property
    def shell_command(self) -> str | None:
        """The command as cron hands it to the shell: ``\\%`` in it becomes ``%``. Worked out
        on each call (one substring test when there is no ``\\%``): a cache would cost every
        line a ``__dict__``, 100 bytes more on each of 100,000 lines."""
        if self.command is None:
            return None
        return _unescape_percent(self.command)

    @property
    def is_reboot(self) -> bool:
        return self.schedule == "@reboot"


@dataclass(frozen=True)
class CrontabFile:
    """A parsed file: every line in order, plus how it was read."""

    path: str
    lines: tuple[CrontabLine, ...]
    format: str  # "user" or "system"
    format_reason: str
    host: str | None = None
    problems: tuple[Problem, ...] = ()
    #: True when neither ``--format`` nor the file's place (cron.d, /etc/crontab, cron's spool,
    #: stdin) said the format and it was guessed from the lines themselves.
    format_inferred: bool = False

    @property
    def jobs(self) -> list[CrontabLine]:
        job = Kind.JOB  # looked up once: an enum member per line costs more than the test
        return [line for line in self.lines if line.kind is job]

    @property
    def invalid(self) -> list[CrontabLine]:
        invalid = Kind.INVALID
        return [line for line in self.lines if line.kind is invalid]

    @property
    def label(self) -> str:
        return f"{self.host}:{self.path}" if self.host else self.path

    @property
    def ignored(self) -> bool:
        """Whether cron ignores the whole file (none of its lines runs): a file-level problem
        such as ``file-ignored`` (Debian drops a system crontab with a bad line or no final
        newline) or ``not-a-crontab``."""
        return any(p.code in FILE_IGNORED for p in self.problems)

    def to_bytes(self) -> bytes:
        """The file exactly as it was read."""
        return "".join(line.raw for line in self.lines).encode(ENCODING, ERRORS)


#: File-level problem codes that mean no line of the file runs.
FILE_IGNORED = frozenset({"file-ignored", "not-a-crontab"})

_ESCAPE = re.compile(r"\\(.)", re.S)


def _unescape_percent(command: str) -> str:
    # Vixie do_command.c: while copying the command, "\%" collapses to "%"; other
    # backslash pairs stay as they are. Escapes are read pairwise from the left.
    if "\\%" not in command:
        return command
    return _ESCAPE.sub(lambda m: "%" if m.group(1) == "%" else m.group(0), command)
