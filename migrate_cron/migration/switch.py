"""Switching one crontab line to the queue (``migrate``) and back (``rollback``).

Guarantees:

- Only the job's own line changes; every other byte of the crontab stays as it was. A job
  with several origins (the same line on several hosts) has that line changed in each file
  switched together, or one origin at a time (``HOST:PATH``); each origin's switch is recorded
  on its own, so rollback restores each.
- A line that changed since the registry was generated is never switched: the registry's
  ``source.text`` is what rollback restores, so it must be what the file holds.
- ``rollback`` writes ``source.text`` back, so after any sequence of migrate/rollback over a
  file's jobs, rolling all back gives the original file byte for byte.
- The registry and the crontab change together or not at all (``commit``); a dry run
  writes nothing.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from migrate_cron.errors import ConfigError, UsageError
from migrate_cron.migration.commit import check_installed, commit, registry_lock
from migrate_cron.migration.crontab_file import is_text_safe
from migrate_cron.migration.install import Installer
from migrate_cron.migration.line_switch import (
    AlreadyThere,
    LineChange,
    Refused,
    SwitchResult,
    restore_origin,
    switch_origin,
)
from migrate_cron.migration.origins import chosen_origins, given_files, in_source_order
from migrate_cron.migration.switch_notes import what_changes
from migrate_cron.migration.target import Target
from migrate_cron.registry import JobSpec, Migration, Registry, document, parse_registry, paths
from migrate_cron.vocabulary import Mode

TARGET_MODES = (Mode.ENQUEUE, Mode.SCHEDULER)


@dataclass(frozen=True)
class _Loaded:
    text: str
    registry: Registry
    spec: JobSpec


def migrate(
    registry_path: Path,
    name: str,
    to: str,
    target: Target,
    now: datetime,
    *,
    crontab: Path | str | Sequence[Path | str] | None = None,
    dry_run: bool = False,
    install: bool = False,
    installer: Installer | None = None,
    file_format: str | None = None,
    strip_swallow: bool = False,
    keep_swallow: bool = False,
    cron: str = "debian",
) -> list[SwitchResult]:
    """Switch job ``name``'s crontab lines to ``to`` (``enqueue`` or ``scheduler``): every
    origin not yet switched, or the ones ``crontab`` names (files or ``HOST:PATH``), all in
    one change. One result per origin rewritten.

    The crontab's format must be a fact — its place (cron.d, /etc/crontab, cron's spool) or
    ``file_format`` — when its lines alone could be read either way: a system line rewritten
    without its user field makes Debian's cron drop the whole file. ``cron`` is which cron
    reads the files (``--cron``): they are parsed as it reads them.

    A tail that forces success (``|| true``) is removed from the registry's command unless
    ``keep_swallow``; ``strip_swallow`` removes the ``/dev/null`` redirections too."""
    if to not in TARGET_MODES:
        raise UsageError(f"--to must be one of {', '.join(TARGET_MODES)}, not {to!r}")
    with registry_lock(registry_path, dry_run):
        loaded = _load(registry_path, name)
        spec = loaded.spec
        _switchable(spec, registry_path)
        chosen = chosen_origins(spec, registry_path, given_files(crontab), rolling_back=False)
        todo = [
            (src, path)
            for src, path in chosen
            if not (spec.migration_of(src) is not None and spec.mode == to)
        ]
        if not todo:
            where = ", ".join(src.label for src, _ in chosen)
            raise AlreadyThere(f"{name} already runs via {to} from {where} (nothing to do)")
        if install and len(todo) > 1:
            raise UsageError("--install switches one user crontab: name it with --crontab")
        if spec.mode != Mode.CRON and not spec.migrations:
            raise Refused(
                f"{name} has mode {spec.mode!r} but no record of a switch by migrate-cron; "
                'set its mode back to "cron" in the registry, then migrate it'
            )
        previous = spec.migrations[0].previous_mode if spec.migrations else spec.mode
        switches = {m.origin: m for m in spec.migrations}
        results: list[SwitchResult] = []
        changes: list[LineChange] = []
        for src, path in todo:
            change = switch_origin(spec, src, path, to, target, install, file_format, todo, cron)
            changes.append(change)
            results.append(change.result)
            stored = paths.stored_path(path, registry_path.parent)
            origin = src.label if len(spec.sources) > 1 else None
            old = spec.migration_of(src)
            switches.pop(old.origin if old else origin, None)
            switches[origin] = Migration(
                previous_mode=previous,
                crontab=stored,
                line=change.result.after,
                switched_at=now.replace(microsecond=0),
                installed=install,
                origin=origin,
            )
        if strip_swallow and keep_swallow:
            raise UsageError("--strip-swallow and --keep-swallow contradict each other")
        swallow = "keep" if keep_swallow else "all" if strip_swallow else "tail"
        advice, command = what_changes(spec, swallow)
        results[0] = replace(results[0], notes=results[0].notes + tuple(advice))
        if install:
            check_installed(installer, changes[0].before, changes[0].path)
        if dry_run:
            return results
        new_registry = document.set_switches(loaded.text, name, to, in_source_order(spec, switches))
        if command is not None:
            new_registry = document.set_command(new_registry, name, command)
        saved = commit(registry_path, loaded.text, new_registry, changes, install, installer)
        return [_written(r, b) for r, b in zip(results, saved, strict=True)]


def rollback(
    registry_path: Path,
    name: str,
    *,
    crontab: Path | str | Sequence[Path | str] | None = None,
    dry_run: bool = False,
    install: bool | None = None,
    installer: Installer | None = None,
) -> list[SwitchResult]:
    """Put job ``name``'s original crontab lines back, byte for byte: every switched origin,
    or the ones ``crontab`` names. The job gets its previous mode back once no origin is
    switched any more."""
    with registry_lock(registry_path, dry_run):
        loaded = _load(registry_path, name)
        spec = loaded.spec
        if not spec.migrations:
            if spec.mode == Mode.CRON:
                raise AlreadyThere(f"{name} is not switched (mode cron): nothing to roll back")
            raise Refused(
                f"{name} has mode {spec.mode!r} but no record of a switch by migrate-cron, so "
                "there is no line to restore; change its mode in the registry by hand"
            )
        _switchable(spec, registry_path)
        chosen = chosen_origins(spec, registry_path, given_files(crontab), rolling_back=True)
        todo = [(src, path) for src, path in chosen if spec.migration_of(src) is not None]
        if not todo:
            where = ", ".join(src.label for src, _ in chosen)
            raise AlreadyThere(f"{name} is not switched in {where}: nothing to roll back")
        first = spec.migration_of(todo[0][0])
        assert first is not None
        do_install = first.installed if install is None else install
        if do_install and len(todo) > 1:
            raise UsageError("--install restores one user crontab: name it with --crontab")
        remaining = {m.origin: m for m in spec.migrations}
        changes: list[LineChange] = []
        for src, path in todo:
            mig = spec.migration_of(src)
            assert mig is not None
            changes.append(restore_origin(spec, src, mig, path, do_install))
            remaining.pop(mig.origin, None)
        mode = spec.mode if remaining else first.previous_mode
        results = [replace(c.result, mode=Mode(mode)) for c in changes]
        if do_install:
            check_installed(installer, changes[0].before, changes[0].path)
        if dry_run:
            return results
        new_registry = document.set_switches(
            loaded.text, name, mode, in_source_order(spec, remaining)
        )
        saved = commit(registry_path, loaded.text, new_registry, changes, do_install, installer)
        return [_written(r, b) for r, b in zip(results, saved, strict=True)]


def _load(registry_path: Path, name: str) -> _Loaded:
    try:
        text = registry_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(
            f"{registry_path}: no registry file (create one with "
            "`migrate-cron generate registry CRONTAB`)"
        ) from None
    try:
        registry = parse_registry(tomllib.loads(text), str(registry_path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{registry_path}: invalid TOML: {exc}") from None
    return _Loaded(text, registry, registry.get(name))


def _switchable(spec: JobSpec, registry_path: Path):  # type: ignore[no-untyped-def]
    if spec.source is None:
        raise Refused(
            f"{spec.name} in {registry_path} has no [jobs.{spec.name}.source] (it was not "
            "generated from a crontab line), so there is no line to switch; generate it with "
            "`migrate-cron generate registry CRONTAB`"
        )
    if spec.command is None or not spec.schedule:
        raise Refused(f"{spec.name} has no command and schedule: only cron lines are switched")
    if not is_text_safe(spec.source.text):
        raise Refused(f"{spec.name}: its source line is not UTF-8 text")
    return spec.source


def _written(result: SwitchResult, saved: Path) -> SwitchResult:
    return replace(result, written=True, backup=str(saved))
