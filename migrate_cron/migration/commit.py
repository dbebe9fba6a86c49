"""The registry and the crontabs change together or not at all, one command at a time.

Each file is replaced atomically; if a later write (or ``crontab -``) fails, what was already
written is put back. Two migrate-cron commands never interleave their read-modify-write: both
files are changed under a lock file next to the registry, where the crontab backups are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from migrate_cron.errors import UsageError
from migrate_cron.migration.crontab_file import CrontabText, atomic_write, backup
from migrate_cron.migration.install import Installer
from migrate_cron.migration.line_switch import LineChange, Refused

STATE_DIR = ".migrate-cron"


def check_installed(installer: Installer | None, text: CrontabText, path: Path) -> None:
    if installer is None:
        from migrate_cron.migration.install import CrontabCommand

        installer = CrontabCommand()
    current = installer.current()
    if current != text.render():
        what = (
            "there is no installed crontab"
            if current is None
            else (
                "the installed crontab differs from it (edited with `crontab -e` since the export?)"
            )
        )
        raise Refused(
            f"--install: {what}; nothing was changed. Export it again with "
            f"`crontab -l > {path}`, run `migrate-cron generate registry {path}`, then retry"
        )


def commit(
    registry_path: Path,
    old_registry: str,
    new_registry: str,
    changes: Sequence[LineChange],
    install: bool,
    installer: Installer | None,
) -> list[Path]:
    """Write the registry, every crontab and (optionally) the installed crontab; on any
    failure put back what was already written. Returns each crontab's backup."""
    saved = [
        backup(c.path, c.before.render(), registry_path.parent / STATE_DIR / "backups")
        for c in changes
    ]
    atomic_write(registry_path, new_registry.encode("utf-8"))
    written: list[LineChange] = []
    try:
        for change in changes:
            atomic_write(change.path, change.after.render())
            written.append(change)
        if install:
            if installer is None:
                from migrate_cron.migration.install import CrontabCommand

                installer = CrontabCommand()
            installer.install(changes[0].after.render())
    except BaseException:
        for change in reversed(written):
            atomic_write(change.path, change.before.render())
        atomic_write(registry_path, old_registry.encode("utf-8"))
        raise
    return saved


@contextlib.contextmanager
def registry_lock(registry_path: Path, dry_run: bool) -> Iterator[None]:
    """One migrate-cron change at a time per registry (a dry run reads only)."""
    if dry_run:
        yield
        return
    state = registry_path.resolve().parent / STATE_DIR
    try:
        state.mkdir(parents=True, exist_ok=True)
        fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise UsageError(f"{state}: cannot create the lock file: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
