"""Crontab paths as the registry holds them: relative to the registry when the crontab sits
beside or below it (a registry checked in with its crontabs), absolute otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path


def source_path(file: str, registry_dir: Path) -> Path:
    """A ``source.file`` / ``migration.crontab`` value as a path (relative to the registry)."""
    p = Path(file)
    return p if p.is_absolute() else (registry_dir / p)


def stored_path(path: Path, registry_dir: Path) -> str:
    """How a crontab path is written into the registry: relative when it sits beside or below
    the registry (a registry checked in with its crontabs), absolute otherwise."""
    path = path.resolve()
    try:
        return str(path.relative_to(registry_dir.resolve()))
    except ValueError:
        return str(path)


class CrontabPaths:
    """The crontab files one merge deals with: each path as the registry stores it, resolved,
    and each file's lines — worked out once per file, not once per line (a 100,000-line
    crontab would resolve its path 200,000 times, and re-reading the file for each switched
    job made a re-run quadratic)."""

    def __init__(self, registry_dir: Path, read_lines: Callable[[str], Iterable[str]]) -> None:
        self.registry_dir = registry_dir
        self._read_lines = read_lines
        self._stored: dict[str, str] = {}
        self._resolved: dict[str, str] = {}
        self._lines: dict[str, set[str]] = {}

    def stored(self, file: str) -> str:
        """``file`` as ``source.file`` holds it (``stored_path``)."""
        found = self._stored.get(file)
        if found is None:
            found = self._stored[file] = stored_path(Path(file), self.registry_dir)
        return found

    def display(self, file: str, host: str | None = None) -> str:
        shown = self.stored(file)
        return f"{host}:{shown}" if host else shown

    def resolved(self, stored: str) -> str:
        """A ``source.file`` value as an absolute, resolved path."""
        found = self._resolved.get(stored)
        if found is None:
            found = self._resolved[stored] = str(source_path(stored, self.registry_dir).resolve())
        return found

    def lines(self, file: str) -> set[str]:
        """The lines of crontab ``file`` (none when it cannot be read)."""
        found = self._lines.get(file)
        if found is None:
            try:
                found = set(self._read_lines(file))
            except Exception:
                found = set()
            self._lines[file] = found
        return found
