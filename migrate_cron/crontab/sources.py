"""Finding and reading crontab files for the commands: files and stdin, ``HOST:PATH`` labels,
every crontab of this host (``--system``), and whose crontab a spool file is. A file that
cannot be read is a usage error naming it, never a traceback."""

from __future__ import annotations

import glob
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from migrate_cron.crontab.entry import CrontabFile, Problem, Severity
from migrate_cron.crontab.parser import parse_crontab
from migrate_cron.errors import UsageError


def load_crontab(
    path: Path,
    data: bytes | None = None,
    *,
    file_format: str = "auto",
    host: str | None = None,
    cron: str = "debian",
) -> CrontabFile:
    """Parse a crontab file (or ``data`` as if it were that file) as ``cron`` reads it; a
    missing or unreadable file is a usage error naming it."""
    if data is None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise UsageError(f"{path}: no such crontab file") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_crontab(data, str(path), format=file_format, host=host, cron=cron)


#: Directories where cron keeps each user's crontab in a file named after the user: Debian
#: and Vixie (/var/spool/cron/crontabs), cronie (/var/spool/cron), busybox (/etc/crontabs).
SPOOL_DIRS = ("/var/spool/cron/crontabs", "/var/spool/cron", "/etc/crontabs")
SYSTEM_FILES = ("/etc/crontab",)
SYSTEM_DIRS = ("/etc/cron.d",)
_HOST_PREFIX = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*):(.+)\Z")
_CRON_D_NAME = re.compile(r"[A-Za-z0-9_-]+\Z")


def spool_owner(path: str) -> str | None:
    """The user whose crontab ``path`` is, when its directory says so (a cron spool file is
    named after its owner); None otherwise."""
    p = Path(path)
    if not p.name or p.name.startswith("."):
        return None
    parent = str(p.parent.resolve()) if p.parent.exists() else str(p.parent)
    return p.name if parent in SPOOL_DIRS else None


def split_origin(arg: str) -> tuple[str | None, str]:
    """``HOST:PATH`` as (HOST, PATH); a path that exists as given (even with a colon in it),
    ``-`` and anything else as (None, arg)."""
    if arg == "-" or os.path.exists(arg):
        return None, arg
    match = _HOST_PREFIX.match(arg)
    if match:
        return match.group(1), match.group(2)
    return None, arg


def load_origins(
    args: Sequence[str | Path], file_format: str = "auto", cron: str = "debian"
) -> list[CrontabFile]:
    """The crontabs ``generate registry`` and ``plan`` were given, as files or ``HOST:PATH``
    (the crontab of HOST, copied here), read as ``cron`` reads them: the host is what makes
    two identical lines two origins of one job rather than one line read twice."""
    crontabs = []
    for arg in args:
        host, path = split_origin(str(arg))
        crontabs.append(load_crontab(Path(path), file_format=file_format, host=host, cron=cron))
    return crontabs


def load_files(
    args: list[str],
    hosts: list[str],
    system: bool,
    file_format: str,
    warn: Callable[[str], None],
    cron: str = "debian",
) -> list[CrontabFile]:
    """The crontabs ``analyze`` was given: files, ``-`` for stdin, ``HOST:PATH`` labels, and
    with ``system`` every crontab of this host; ``warn`` hears about files it skips. Among
    several files, one that is surely not a crontab is kept with only a file-level
    ``not-a-crontab`` error: cron would reject it, so it must not pass unnoticed."""
    from migrate_cron.crontab.parser import parse_crontab, read_crontab

    if len(hosts) > max(len(args), 1) and not system:
        raise UsageError(f"{len(hosts)} --host labels for {len(args)} files")
    crontabs: list[CrontabFile] = []
    for index, arg in enumerate(args):
        host = hosts[index] if index < len(hosts) else None
        prefix, path = split_origin(arg)
        host = prefix or host
        if path == "-":
            data = sys.stdin.buffer.read()
            crontabs.append(parse_crontab(data, "-", format=file_format, host=host, cron=cron))
            continue
        if len(args) > 1 and os.path.isdir(path):
            warn(f"skipped {path}: a directory")
            continue
        try:
            crontab = read_crontab(path, format=file_format, host=host, cron=cron)
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        reason = _not_a_crontab(crontab) if len(args) > 1 else None
        if reason:
            warn(f"{path}: {reason}: cron would reject it (pass it alone to see every line)")
            crontab = replace(crontab, problems=(*crontab.problems, _rejected(reason)))
        crontabs.append(crontab)
    if system:
        crontabs.extend(_system_crontabs(file_format, hosts[0] if hosts else None, warn, cron))
    return crontabs


def _rejected(reason: str) -> Problem:
    return Problem(
        "not-a-crontab",
        f"{reason}: cron would reject this file, so nothing in it runs",
        Severity.ERROR,
    )


def _not_a_crontab(crontab: CrontabFile) -> str | None:
    """Why a file among many (``analyze dir/*``) is surely not a crontab, or None."""
    from migrate_cron.crontab.entry import Kind

    lines = crontab.lines
    if lines and lines[0].text.startswith("#!"):
        return "a script (it starts with #!), not a crontab"
    kinds = [line.kind for line in lines]
    invalid = kinds.count(Kind.INVALID)
    if (
        invalid
        and Kind.JOB not in kinds
        and Kind.ENV not in kinds
        and invalid * 2 >= len([k for k in kinds if k not in (Kind.BLANK, Kind.COMMENT)])
    ):
        return f"no job or NAME=value line, {invalid} line(s) cron would reject"
    return None


def _system_crontabs(
    file_format: str, host: str | None, warn: Callable[[str], None], cron: str = "debian"
) -> list[CrontabFile]:
    from migrate_cron.crontab.parser import read_crontab

    found: list[tuple[str, str]] = [(p, "system") for p in SYSTEM_FILES if os.path.exists(p)]
    for directory in SYSTEM_DIRS:
        for path in sorted(glob.glob(os.path.join(directory, "*"))):
            if not os.path.isfile(path):
                continue
            if not _CRON_D_NAME.match(os.path.basename(path)):
                warn(f"skipped {path}: cron ignores cron.d files whose names contain dots etc.")
                continue
            found.append((path, "system"))
    for directory in SPOOL_DIRS:
        if not os.path.isdir(directory):
            continue
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            warn(f"skipped {directory}: {exc.strerror or exc} (run as root to include it)")
            continue
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                found.append((path, "user"))
        break
    crontabs: list[CrontabFile] = []
    for path, kind in found:
        try:
            chosen = kind if file_format == "auto" else file_format
            crontabs.append(read_crontab(path, format=chosen, host=host, cron=cron))
        except OSError as exc:
            warn(f"skipped {path}: {exc.strerror or exc}")
    return crontabs
