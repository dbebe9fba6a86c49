"""Registries and crontabs for the migration tests, built without the parser."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from migrate_cron.migration.crontab_file import crontab_lines
from migrate_cron.registry import Source
from migrate_cron.registry import writer as registry_writer
from migrate_cron.registry.proposal import GeneratedJob


@dataclass
class FakeInstaller:
    """Stands in for the `crontab` command: remembers what is installed."""

    installed: bytes | None = None
    fail_install: bool = False
    calls: list[bytes] = field(default_factory=list)

    def current(self) -> bytes | None:
        return self.installed

    def install(self, data: bytes) -> None:
        from migrate_cron.errors import MigrateCronError

        if self.fail_install:
            raise MigrateCronError("crontab - refused")
        self.calls.append(data)
        self.installed = data


def job(
    path: Path,
    line: int,
    text: str,
    command: str,
    schedule: str,
    user: str | None = None,
    name: str | None = None,
) -> GeneratedJob:
    return GeneratedJob(
        name=name or command.split()[-1].replace(":", "-"),
        command=command,
        schedule=schedule,
        timezone="UTC",
        sources=(Source(str(path.resolve()), line, text, user),),
        user=user,  # a system line runs as its user field, as generate writes it
    )


def write_registry(registry: Path, jobs: list[GeneratedJob], files: list[Path]) -> str:
    text, _ = registry_writer.merge(
        registry.read_text() if registry.exists() else None,
        jobs,
        [str(f) for f in files],
        registry.parent,
        crontab_lines=crontab_lines,
    )
    registry.write_text(text)
    return text
