"""Which of a job's origins (the same line on several hosts or files) a migrate or rollback
works on, each with the crontab file to change."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from migrate_cron.errors import UsageError
from migrate_cron.registry import JobSpec, Migration, Source, paths


def given_files(crontab: Path | str | Sequence[Path | str] | None) -> list[str]:
    if crontab is None:
        return []
    if isinstance(crontab, str | Path):
        return [str(crontab)]
    return [str(c) for c in crontab]


def chosen_origins(
    spec: JobSpec, registry_path: Path, given: Sequence[str], *, rolling_back: bool
) -> list[tuple[Source, Path]]:
    """The origins a command works on, each with the file to change: the ones ``given``
    names (``HOST:PATH`` picks the origin of HOST; a plain path the origin read from it, or
    the only origin), else every origin (with its switched file when rolling back)."""
    from migrate_cron.crontab.sources import split_origin

    base = registry_path.parent

    def default_path(src: Source) -> Path:
        mig = spec.migration_of(src)
        if rolling_back and mig is not None:
            return paths.source_path(mig.crontab, base)
        return paths.source_path(src.file, base)

    if not given:
        return [(src, default_path(src)) for src in spec.sources]
    chosen: list[tuple[Source, Path]] = []
    labels = ", ".join(s.label for s in spec.sources)
    for arg in given:
        host, raw = split_origin(arg)
        path = Path(raw)
        if host is not None:
            found = [s for s in spec.sources if s.host == host]
        elif len(spec.sources) == 1:
            found = list(spec.sources)
        else:
            here = path.resolve()
            found = [
                s
                for s in spec.sources
                if paths.source_path(s.file, base).resolve() == here
                or default_path(s).resolve() == here
            ]
        if len(found) != 1:
            what = f"host {host}" if host is not None else str(path)
            raise UsageError(
                f"--crontab {arg}: {what} matches {len(found)} of {spec.name}'s origins "
                f"({labels}); name one as HOST:PATH"
            )
        if any(found[0] == s for s, _ in chosen):
            raise UsageError(f"--crontab {arg}: {found[0].label} is named twice")
        chosen.append((found[0], path))
    return chosen


def in_source_order(spec: JobSpec, switches: dict[str | None, Migration]) -> list[Migration]:
    order = {s.label: i for i, s in enumerate(spec.sources)}
    return sorted(switches.values(), key=lambda m: order.get(m.origin or "", 0))
