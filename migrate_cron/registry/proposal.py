"""What ``generate registry`` proposes for each crontab line, and what the merge did with it:
the values passed between the migration's analysis and the registry writer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from migrate_cron.registry.spec import Source
from migrate_cron.vocabulary import Policy

NEW = "new"
KEPT = "kept"
MOVED = "moved"
CHANGED = "changed"
UPDATED = "updated"
GONE = "gone"
SWITCHED = "switched"
JOINED = "joined"
REFUSED = "refused"


@dataclass(frozen=True)
class Refusal:
    """Why a line gets no entry (one sentence) and what registers it anyway; ``file`` is the
    crontab as the user named it (``HOST:PATH``), for the warning that names the line."""

    reason: str
    remedy: str
    file: str = ""

    @property
    def text(self) -> str:
        return f"{self.reason} ({self.remedy})"


@dataclass(frozen=True)
class GeneratedJob:
    """A registry entry proposed for one crontab job line (``source.file`` is absolute);
    ``name`` is the readable name the analysis gave the line (made unique on merge)."""

    name: str
    command: str
    schedule: str
    timezone: str
    #: Every line this job stands for (the same line on several hosts or in several files).
    sources: tuple[Source, ...]
    user: str | None = None
    shell: str = "/bin/sh"
    env: Mapping[str, str] = field(default_factory=dict)
    stdin: str | None = None
    cwd: str | None = None
    #: Where the worker runs it when ``cwd`` is missing: what the cron did (None: not run).
    cwd_fallback: str | None = None
    policy: str = Policy.SKIP.value
    note: str = ""
    concurrency: int | None = None
    overlap: str | None = None
    #: Set when the line must not be registered: merge adds no entry for it.
    refusal: Refusal | None = None

    @property
    def source(self) -> Source:
        return self.sources[0]


@dataclass(frozen=True)
class MergeAction:
    """What ``generate registry`` did with one job: ``status`` is one of NEW, KEPT, MOVED,
    CHANGED (conflict, left alone), UPDATED (conflict taken with --force), GONE, SWITCHED,
    JOINED, REFUSED (no entry; ``detail`` says why and what to do)."""

    name: str
    status: str
    file: str
    line: int
    detail: str = ""
    old_text: str | None = None
    new_text: str | None = None
