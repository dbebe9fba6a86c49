"""Reading a registry file: TOML in, validated ``Registry`` out, an entry's error naming the
file, the line, the entry and the key. ``load_job`` reads one entry alone, for the cron
line's ``enqueue NAME``: its cost must not grow with the registry."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.errors import ConfigError, UnknownJob, UsageError
from migrate_cron.registry.job_entry import parse_job
from migrate_cron.registry.keys import check_keys
from migrate_cron.registry.notify_targets import parse_settings
from migrate_cron.registry.spec import EntryError, JobSpec, Registry
from migrate_cron.registry.tables import parse_tables

if TYPE_CHECKING:
    from migrate_cron.registry.text import Found


def load_registry(path: str | Path, *, partial: bool = False) -> Registry:
    """Read and validate a registry file; errors name the file, the line, the job and the key.

    ``partial``: an entry's error is that entry's — the others load and the bad ones are in
    ``Registry.errors`` (the worker and the scheduler run the rest; ``verify`` fails on
    them). Otherwise the first bad entry is raised. Errors of the file itself (unreadable,
    not UTF-8, TOML syntax, ``[defaults]``, ``[notify]``, ``[tables]``) are always raised."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise _no_registry(p) from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    return parse_registry(data, str(p), partial=partial, source=raw)


#: Keys that describe one job's lines and switches: never inherited from [defaults].
_PER_JOB = ("source", "sources", "migration", "migrations")


def parse_registry(
    data: Mapping[str, Any],
    path: str = "migrate-cron.toml",
    *,
    partial: bool = False,
    source: bytes | None = None,
) -> Registry:
    """``data`` (parsed TOML) as a registry; ``source`` (the file's bytes) lets an entry's
    error name its line. See ``load_registry`` for ``partial``."""
    unknown_top = set(data) - {"jobs", "defaults", "notify", "tables"}
    if unknown_top:
        raise ConfigError(f"{path}: unknown top-level key(s) {sorted(unknown_top)}")
    raw_notify = data.get("notify", {})
    if not isinstance(raw_notify, dict):
        raise ConfigError(f"{path}: [notify] must be a table")
    try:
        notify = parse_settings(raw_notify)
    except ValueError as exc:
        raise ConfigError(f"{path}: [notify]: {exc}") from None
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}: [defaults] must be a table")
    check_keys(path, "[defaults]", defaults)
    jobs_raw = data.get("jobs", {})
    if not isinstance(jobs_raw, dict):
        raise ConfigError(f"{path}: [jobs] must be a table of [jobs.NAME] tables")
    jobs: dict[str, JobSpec] = {}
    errors: dict[str, EntryError] = {}
    for name, table in jobs_raw.items():
        try:
            jobs[name] = job_entry(path, name, table, defaults)
        except EntryError as exc:
            errors[name] = exc
    for spec in list(jobs.values()):
        for key, names in (("on_success", spec.on_success), ("on_failure", spec.on_failure)):
            # A chain to an entry that did not load still names a job: it is enqueued and
            # waits, unclaimed, until that entry is fixed.
            unknown = [n for n in names if n not in jobs and n not in errors]
            if unknown and spec.name in jobs:
                errors[spec.name] = EntryError(
                    path, f"job {spec.name!r}", key, f"no job {', '.join(unknown)} in the registry"
                )
                del jobs[spec.name]
    if errors and source is not None:
        errors = _with_lines(source, errors)
    if errors and not partial:
        raise next(iter(errors.values()))
    tables = parse_tables(path, data.get("tables", {}), defaults)
    return Registry(path, jobs, notify, tables, errors)


def job_entry(path: str, name: str, table: Any, defaults: Mapping[str, Any]) -> JobSpec:
    """One ``[jobs.NAME]`` table, with ``[defaults]`` under it, as a validated job; raises
    ``EntryError``."""
    if not isinstance(table, dict):
        raise EntryError(path, f"job {name!r}", None, f"must be a table [jobs.{name}]")
    merged = {
        **{k: v for k, v in defaults.items() if k not in _PER_JOB},
        **table,
    }
    return parse_job(path, name, merged)


def _with_lines(source: bytes, errors: Mapping[str, EntryError]) -> dict[str, EntryError]:
    """The errors with the line of the key each names (one pass over the text's headers)."""
    from migrate_cron.registry.text import entry_lines

    lines = entry_lines(source, {name: exc.key for name, exc in errors.items()})
    return {name: exc.at_line(lines.get(name)) for name, exc in errors.items()}


def load_job(path: str | Path, name: str) -> JobSpec:
    """Job ``name`` alone, for ``enqueue NAME``: its cost does not grow with the registry.

    ``registry.text`` cuts the job's tables (and ``[defaults]``) out of the file and only
    those are parsed and validated, as ``load_registry`` would. When the scan cannot be sure
    — or finds no table of that name — the whole file is parsed (``partial``), so the answer
    is always the full loader's: the entry, its own ``EntryError``, ``UnknownJob``, or the
    file's error. Not checked here: that ``on_success``/``on_failure`` name jobs of the
    registry (other entries; enqueueing does not use them)."""
    p = Path(path)
    return _load_job(p, _find_job(p, name), name)


def find_entry(path: str | Path, name: str) -> JobSpec | None:
    """Kind ``name``'s entry, or ``None`` when the registry has none, for fan-out: a
    queue-only kind needs no entry, so another entry's error is not its own (issue 30, item
    4) and, when the scan is sure the file has no table of that name, nothing is parsed."""
    p = Path(path)
    found = _find_job(p, name)
    if found is not None and not found.job:
        return None
    try:
        return _load_job(p, found, name)
    except UnknownJob:
        return None


def _find_job(p: Path, name: str) -> Found | None:
    from migrate_cron.registry import text as registry_text

    try:
        data = registry_text.open_bytes(p)
    except FileNotFoundError:
        raise _no_registry(p) from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return registry_text.find_job(data, name)


def _load_job(p: Path, found: Found | None, name: str) -> JobSpec:
    text = found.text() if found is not None and found.job else None
    if found is not None and text is not None:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            doc = None  # cut inside a value, or a syntax error: the whole file says which
        if doc is not None:
            defaults = doc.get("defaults", {})
            if isinstance(defaults, dict):
                check_keys(str(p), "[defaults]", defaults)
                try:
                    return job_entry(str(p), name, doc["jobs"][name], defaults)
                except EntryError as exc:
                    raise exc.at_line(found.line_of(exc.key)) from None
    return load_registry(p, partial=True).get(name)


def _no_registry(p: Path) -> UsageError:
    return UsageError(
        f"{p}: no registry file (create one with `migrate-cron generate registry CRONTAB`)"
    )
