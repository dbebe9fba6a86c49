"""Switching one crontab line to the queue (``migrate``) and back (``rollback``).

Guarantees:

- Only the job's own line changes; every other byte of the crontab stays as it was.
- A line that changed since the registry was generated is never switched: the registry's
  ``source.text`` is what rollback restores, so it must be what the file holds.
- ``rollback`` writes ``source.text`` back, so after any sequence of migrate/rollback over a
  file's jobs, rolling all back gives the original file byte for byte.
- The registry and the crontab change together or not at all: each is replaced atomically, and
  if the second write (or ``crontab -``) fails, the first is put back. A dry run writes nothing.
- Two migrate-cron commands never interleave their read-modify-write: both files are changed
  under a lock file next to the registry, where the crontab backups are kept too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from migrate_cron.errors import ConfigError, MigrateCronError, UsageError
from migrate_cron.migration import registry_writer
from migrate_cron.migration.crontab_file import CrontabText, atomic_write, backup, is_text_safe
from migrate_cron.migration.install import Installer
from migrate_cron.migration.rewrite import enqueue_line, scheduler_line
from migrate_cron.registry import JobSpec, Migration, Registry, parse_registry
from migrate_cron.vocabulary import Mode

TARGET_MODES = (Mode.ENQUEUE, Mode.SCHEDULER)
STATE_DIR = ".migrate-cron"


class Refused(MigrateCronError):
    """The switch would be unsafe; nothing was changed. The message says what to do."""


class AlreadyThere(MigrateCronError):
    """Nothing to do; the CLI says so and exits 0."""

    exit_code = 0


@dataclass(frozen=True)
class Target:
    """How the switched crontab line reaches migrate-cron from cron's bare environment:
    absolute paths, and a database URL without a password (or none: read from the
    environment cron gives it)."""

    executable: str
    registry: str
    database_url: str | None = None
    table_prefix: str = ""

    def argv(self, name: str) -> list[str]:
        argv = [self.executable, "enqueue", name, "--quiet", "--registry", self.registry]
        if self.database_url is not None:
            argv += ["--database-url", self.database_url]
        if self.table_prefix:
            argv += ["--table-prefix", self.table_prefix]
        return argv


@dataclass(frozen=True)
class SwitchResult:
    """What a migrate or rollback did (or, with ``written`` False, would do)."""

    name: str
    mode: str
    previous_mode: str
    crontab: str
    line: int
    before: str
    after: str
    diff: str
    written: bool
    installed: bool = False
    backup: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    run_as: str | None = None  # the user field of a system crontab line


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
    crontab: Path | None = None,
    dry_run: bool = False,
    install: bool = False,
    installer: Installer | None = None,
    file_format: str | None = None,
) -> SwitchResult:
    """Switch job ``name``'s crontab line to ``to`` (``enqueue`` or ``scheduler``).

    The crontab's format must be a fact — its place (cron.d, /etc/crontab, cron's spool) or
    ``file_format`` — when its lines alone could be read either way: a system line rewritten
    without its user field makes Debian's cron drop the whole file."""
    if to not in TARGET_MODES:
        raise UsageError(f"--to must be one of {', '.join(TARGET_MODES)}, not {to!r}")
    with registry_lock(registry_path, dry_run):
        loaded = _load(registry_path, name)
        spec = loaded.spec
        src = _switchable(spec, registry_path)
        path = _crontab_path(crontab, spec, registry_path)
        notes: list[str] = []
        if spec.mode == to:
            raise AlreadyThere(f"{name} already runs via {to} (nothing to do)")
        if install and src.user is not None:
            raise UsageError(
                f"{path} is a system crontab (its lines name a user): cron reads it in place, "
                "so there is nothing to install — leave out --install"
            )
        if spec.mode == "cron":
            expected, previous = src.text, "cron"
        else:
            if spec.migration is None:
                raise Refused(
                    f"{name} has mode {spec.mode!r} but no record of a switch by migrate-cron; "
                    'set its mode back to "cron" in the registry, then migrate it'
                )
            expected, previous = spec.migration.line, spec.migration.previous_mode
        text = CrontabText.read(path)
        # A crontab installed with `crontab -` is a user's crontab: that is a fact too.
        _check_format(path, text, src.user, file_format or ("user" if install else None))
        number = _locate(text, expected, src.line, path, name, spec.mode)
        if number != src.line and spec.mode == "cron":
            notes.append(f"the line moved from {src.line} to {number} since generation")
        if spec.user is not None:
            notes.append(
                f"the worker runs it as {spec.user}, as cron did (a worker that cannot become "
                f"{spec.user} — not root, or no such user on its host — leaves it to others)"
            )
        elif src.user is not None:
            notes.append(
                f"cron ran it as {src.user}, but the registry has no `user` key: the worker "
                f'would run it as its own user — add `user = "{src.user}"` to [jobs.{name}]'
            )
        else:
            notes.append("the worker runs it as the worker's own user (no `user` key)")
        if to == "enqueue":
            try:
                new_line = enqueue_line(src.text, src.user is not None, target.argv(name))
            except ValueError as exc:
                raise UsageError(f"cannot switch {name}: {exc}") from None
        else:
            new_line = scheduler_line(src.text, name)
        after = text.replace(number, new_line)
        shown = str(path)
        result = SwitchResult(
            name=name,
            mode=to,
            previous_mode=spec.mode,
            crontab=shown,
            line=number,
            before=text.lines[number - 1],
            after=new_line,
            diff=text.diff(after, shown),
            written=False,
            installed=install,
            notes=tuple(notes),
            run_as=src.user,
        )
        if install:
            _check_installed(installer, text, path)
        if dry_run:
            return result
        migration = Migration(
            previous_mode=previous,
            crontab=registry_writer.stored_path(path, registry_path.parent),
            line=new_line,
            switched_at=now.replace(microsecond=0),
            installed=install,
        )
        new_registry = registry_writer.set_mode(loaded.text, name, to, migration)
        saved = _commit(
            registry_path, loaded.text, new_registry, path, text, after, install, installer
        )
        return _written(result, saved)


def rollback(
    registry_path: Path,
    name: str,
    *,
    crontab: Path | None = None,
    dry_run: bool = False,
    install: bool | None = None,
    installer: Installer | None = None,
) -> SwitchResult:
    """Put job ``name``'s original crontab line back, byte for byte, and its previous mode."""
    with registry_lock(registry_path, dry_run):
        loaded = _load(registry_path, name)
        spec = loaded.spec
        mig = spec.migration
        if mig is None:
            if spec.mode == "cron":
                raise AlreadyThere(f"{name} is not switched (mode cron): nothing to roll back")
            raise Refused(
                f"{name} has mode {spec.mode!r} but no record of a switch by migrate-cron, so "
                "there is no line to restore; change its mode in the registry by hand"
            )
        src = _switchable(spec, registry_path)
        path = crontab or registry_writer.source_path(mig.crontab, registry_path.parent)
        do_install = mig.installed if install is None else install
        if do_install and src.user is not None:
            raise UsageError(f"{path} is a system crontab: leave out --install")
        text = CrontabText.read(path)
        notes: list[str] = []
        found = text.find(mig.line)
        if len(found) > 1:
            # A copied migrated line would keep enqueueing after a rollback of one copy, and
            # restoring every copy would run the original command more than once: refuse.
            where = ", ".join(str(n) for n in found)
            raise Refused(
                f"{path}: the migrated line of {name} appears {len(found)} times (lines "
                f"{where}); delete the copies you added, keep one, then roll back again"
            )
        if src.line in found:
            number = src.line
        elif len(found) == 1:
            number = found[0]
        else:
            restored = text.find(src.text)
            if not found and len(restored) == 1:
                notes.append(
                    f"the original line is already back at line {restored[0]}; only the "
                    "registry's mode was restored"
                )
                number = restored[0]
            else:
                raise Refused(_not_found(path, name, mig.line, found, text))
        after = text.replace(number, src.text)
        shown = str(path)
        result = SwitchResult(
            name=name,
            mode=mig.previous_mode,
            previous_mode=spec.mode,
            crontab=shown,
            line=number,
            before=text.lines[number - 1],
            after=src.text,
            diff=text.diff(after, shown),
            written=False,
            installed=do_install,
            notes=tuple(notes),
        )
        if do_install:
            _check_installed(installer, text, path)
        if dry_run:
            return result
        new_registry = registry_writer.set_mode(loaded.text, name, mig.previous_mode, None)
        saved = _commit(
            registry_path, loaded.text, new_registry, path, text, after, do_install, installer
        )
        return _written(result, saved)


# ------------------------------------------------------------------------ internals
def _check_format(path: Path, text: CrontabText, user: str | None, requested: str | None) -> None:
    from migrate_cron.crontab.parser import parse_crontab

    parsed = parse_crontab(text.render(), str(path), format=requested or "auto")
    if parsed.format_inferred:
        raise UsageError(
            f"{path}: its format is only inferred from its lines ({parsed.format_reason}); "
            "say which it is with --format user (a user's crontab) or --format system "
            "(/etc/crontab or cron.d style: a user field before the command); nothing written"
        )
    if parsed.format == "system" and user is None:
        raise Refused(
            f"{path} is a system crontab but the registry recorded no user for this line: "
            "re-run `migrate-cron generate registry` on it (--force) so the rewritten line "
            "keeps its user field; nothing written"
        )
    if parsed.format == "user" and user is not None:
        raise Refused(
            f"{path} is a user crontab but the registry recorded the line with user {user!r}: "
            "re-run `migrate-cron generate registry` on it (--force); nothing written"
        )


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


def _crontab_path(given: Path | None, spec: JobSpec, registry_path: Path) -> Path:
    assert spec.source is not None
    if given is not None:
        return given
    return registry_writer.source_path(spec.source.file, registry_path.parent)


def _locate(text: CrontabText, expected: str, hint: int, path: Path, name: str, mode: str) -> int:
    """The line number holding ``expected`` — at ``hint`` if it is still there, else its only
    occurrence — or a refusal showing what the registry expects and what the file has."""
    if text.line(hint) == expected:
        return hint
    found = text.find(expected)
    if len(found) == 1:
        return found[0]
    if mode == "cron":
        raise Refused(_changed(path, name, expected, hint, text, found))
    raise Refused(_not_found(path, name, expected, found, text))


def _changed(
    path: Path, name: str, expected: str, hint: int, text: CrontabText, found: Sequence[int]
) -> str:
    now = text.line(hint)
    if found:
        where = f"it appears {len(found)} times (lines {', '.join(map(str, found))})"
        return (
            f"{path}: the line of {name} is ambiguous: {where}. Nothing was changed. Make the "
            "lines differ (or remove the duplicate), then run `migrate-cron generate registry "
            f"{path}` again"
        )
    return (
        f"{path}: line {hint} of {name} changed since the registry was generated; nothing was "
        f"changed.\n  registry: {expected}\n  file:     "
        f"{now if now is not None else '(the file has no such line)'}\n"
        f"If the edit is intended, run `migrate-cron generate registry {path} --force` to take "
        f"the new line (the name {name} is kept), check the entry, then migrate again"
    )


def _not_found(
    path: Path, name: str, expected: str, found: Sequence[int], text: CrontabText
) -> str:
    del text
    if found:
        return (
            f"{path}: the switched line of {name} appears {len(found)} times; nothing was "
            "changed. Remove the copies by hand, then try again"
        )
    return (
        f"{path}: the line migrate-cron wrote for {name} is not in the file any more; nothing "
        f"was changed.\n  expected: {expected}\nPass the file that has it with --crontab, or "
        "restore the original line by hand and run rollback again (it then only resets the mode)"
    )


def _check_installed(installer: Installer | None, text: CrontabText, path: Path) -> None:
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


def _commit(
    registry_path: Path,
    old_registry: str,
    new_registry: str,
    path: Path,
    before: CrontabText,
    after: CrontabText,
    install: bool,
    installer: Installer | None,
) -> Path:
    """Write registry, crontab and (optionally) the installed crontab; undo on failure."""
    old_bytes = before.render()
    saved = backup(path, old_bytes, registry_path.parent / STATE_DIR / "backups")
    atomic_write(registry_path, new_registry.encode("utf-8"))
    try:
        atomic_write(path, after.render())
        try:
            if install:
                if installer is None:
                    from migrate_cron.migration.install import CrontabCommand

                    installer = CrontabCommand()
                installer.install(after.render())
        except BaseException:
            atomic_write(path, old_bytes)
            raise
    except BaseException:
        atomic_write(registry_path, old_registry.encode("utf-8"))
        raise
    return saved


def _written(result: SwitchResult, saved: Path) -> SwitchResult:
    from dataclasses import replace

    return replace(result, written=True, backup=str(saved))


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
