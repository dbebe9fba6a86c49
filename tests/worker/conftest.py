"""Fixtures of the worker tests that run commands as other users."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory every user can enter (pytest's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="mct-users-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
