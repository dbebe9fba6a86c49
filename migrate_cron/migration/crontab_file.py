"""A crontab file as lines that rebuild to the same bytes, and its safe replacement on disk.

Rollback promises the original file byte for byte — comments, blank lines, env lines, ``%``,
CRLF, odd encodings and a missing final newline included — so the file is never re-serialised
from parsed entries: it is split on ``\\n`` only, each line keeps its own terminator, and only
the one line being switched is replaced. Bytes that are not UTF-8 survive through
``surrogateescape``.

Writing is atomic: a temporary file in the same directory (hidden and ending in ``~``, names
that both Debian cron and cronie ignore in ``/etc/cron.d``), the original mode and owner, then
``os.replace``. A copy of the previous bytes goes to a backup directory next to the registry,
never beside the crontab: cronie would read a backup left in ``/etc/cron.d`` as one more crontab
and run every line twice.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from migrate_cron.errors import MigrateCronError, UsageError

_ENCODING = "utf-8"
_ERRORS = "surrogateescape"


@dataclass(frozen=True)
class CrontabText:
    """Lines without terminators, and each line's terminator (``"\\n"`` or ``""`` for a last
    line without one). ``render()`` gives back exactly the bytes ``parse()`` was given."""

    lines: tuple[str, ...]
    endings: tuple[str, ...]

    @classmethod
    def parse(cls, data: bytes) -> CrontabText:
        text = data.decode(_ENCODING, _ERRORS)
        parts = text.split("\n")
        if parts and parts[-1] == "":
            parts.pop()
            endings = ["\n"] * len(parts)
        else:
            endings = ["\n"] * (len(parts) - 1) + [""]
        return cls(tuple(parts), tuple(endings))

    @classmethod
    def read(cls, path: str | Path) -> CrontabText:
        try:
            return cls.parse(Path(path).read_bytes())
        except FileNotFoundError:
            raise UsageError(f"{path}: no such crontab file") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None

    def render(self) -> bytes:
        return "".join(a + b for a, b in zip(self.lines, self.endings, strict=True)).encode(
            _ENCODING, _ERRORS
        )

    def line(self, number: int) -> str | None:
        """Line ``number`` (1-based) without its terminator, or None past the end."""
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else None

    def find(self, text: str) -> list[int]:
        """The numbers of all lines equal to ``text``."""
        return [i + 1 for i, line in enumerate(self.lines) if line == text]

    def replace(self, number: int, text: str) -> CrontabText:
        if "\n" in text:
            raise ValueError("a crontab line cannot contain a newline")
        lines = list(self.lines)
        lines[number - 1] = text
        return CrontabText(tuple(lines), self.endings)

    def diff(self, other: CrontabText, path: str) -> str:
        """A unified diff from this text to ``other`` (lines shown without terminators)."""
        out = difflib.unified_diff(
            list(self.lines), list(other.lines), f"{path} (before)", f"{path} (after)", lineterm=""
        )
        return "".join(line + "\n" for line in out)


def crontab_lines(path: str) -> tuple[str, ...]:
    """The lines of crontab file ``path`` as ``CrontabText`` reads them (for the registry
    writer, which must not import this package)."""
    return CrontabText.read(path).lines


def is_text_safe(text: str) -> bool:
    """True if ``text`` holds only real characters (no undecodable bytes), so TOML can keep it."""
    try:
        text.encode(_ENCODING)
    except UnicodeEncodeError:
        return False
    return True


def backup(path: Path, data: bytes, backup_dir: Path) -> Path:
    """Keep ``data`` (the file's bytes before a change) in ``backup_dir``; return the copy."""
    backup_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    for n in range(1, 1000):
        target = backup_dir / (f"{path.name}.{stamp}" + (f".{n}" if n > 1 else ""))
        try:
            _write_new(target, data, 0o600)
        except FileExistsError:
            continue
        return target
    raise MigrateCronError(f"{backup_dir}: cannot create a backup file")  # pragma: no cover


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` in one step, keeping its mode and owner.

    Readers (cron) see the old file or the new one, never a half-written one. Refuses rather
    than silently changing the owner: cron ignores a system crontab not owned by root.
    """
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp~")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, st.st_mode & 0o7777)
            if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except PermissionError:
                    raise MigrateCronError(
                        f"{path}: cannot keep its owner (uid {st.st_uid}); run this as that "
                        "user or as root — nothing was changed"
                    ) from None
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
