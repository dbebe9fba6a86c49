"""A small filesystem the test owns and can fill: a tmpfs mounted in a temporary directory
(the tests run as root; without the right to mount, ``small_filesystem`` says why).

``fill`` writes a ballast file until the filesystem is full; deleting the ballast frees it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


class CannotMount(RuntimeError):
    """This machine does not let us mount a filesystem (not root, or no CAP_SYS_ADMIN)."""


@contextlib.contextmanager
def small_filesystem(size_mb: int) -> Iterator[Path]:
    """A fresh tmpfs of ``size_mb`` MiB; unmounted (lazily, if a process still holds a file)
    and its directory removed on the way out."""
    root = Path(tempfile.mkdtemp(prefix="mct-fulldisk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise CannotMount(f"mount -t tmpfs: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


def fill(directory: Path, name: str = "ballast") -> Path:
    """Write zeros to ``directory/name`` until the filesystem has no space left."""
    path = directory / name
    block = b"\0" * (64 * 1024)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            try:
                written = os.write(fd, block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(block) == 1:
                    return path
                block = block[: len(block) // 2]  # fill the last partial blocks too
                continue
            if written < len(block):
                block = block[: max(1, len(block) // 2)]
    finally:
        os.close(fd)
