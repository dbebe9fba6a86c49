"""Reading crontab files from disk for the commands (usage errors, not tracebacks, when a file
cannot be read)."""

from __future__ import annotations

from pathlib import Path

from migrate_cron.crontab.entry import CrontabFile
from migrate_cron.crontab.parser import parse_crontab
from migrate_cron.errors import UsageError


def load_crontab(
    path: Path, data: bytes | None = None, *, file_format: str = "auto"
) -> CrontabFile:
    """Parse a crontab file (or ``data`` as if it were that file); a missing or unreadable
    file is a usage error naming it."""
    if data is None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise UsageError(f"{path}: no such crontab file") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_crontab(data, str(path), format=file_format)


#: Directories where cron keeps each user's crontab in a file named after the user: Debian
#: and Vixie (/var/spool/cron/crontabs), cronie (/var/spool/cron), busybox (/etc/crontabs,
#: /var/spool/cron/crontabs too).
SPOOL_DIRS = ("/var/spool/cron/crontabs", "/var/spool/cron", "/etc/crontabs")


def spool_owner(path: str) -> str | None:
    """The user whose crontab ``path`` is, when its directory says so (a cron spool file is
    named after its owner); None otherwise."""
    p = Path(path)
    if not p.name or p.name.startswith("."):
        return None
    parent = str(p.parent.resolve()) if p.parent.exists() else str(p.parent)
    return p.name if parent in SPOOL_DIRS else None
