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
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from migrate_cron.errors import ConfigError, MigrateCronError, UsageError
from migrate_cron.migration.crontab_file import CrontabText, atomic_write, backup, is_text_safe
from migrate_cron.migration.install import Installer
from migrate_cron.migration.rewrite import enqueue_line, scheduler_line
from migrate_cron.registry import (
    JobSpec,
    Migration,
    Registry,
    Source,
    document,
    parse_registry,
    paths,
)
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
    mode: Mode
    previous_mode: Mode
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
    origin: str | None = None  # the origin's label: HOST:FILE, or FILE


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
        chosen = _origins(spec, registry_path, _given(crontab), rolling_back=False)
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
        changes: list[_Change] = []
        for src, path in todo:
            change = _switch_origin(spec, src, path, to, target, install, file_format, todo, cron)
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
        advice, command = _what_matters(spec, swallow)
        results[0] = replace(results[0], notes=results[0].notes + tuple(advice))
        if install:
            _check_installed(installer, changes[0].before, changes[0].path)
        if dry_run:
            return results
        new_registry = document.set_switches(
            loaded.text, name, to, _in_source_order(spec, switches)
        )
        if command is not None:
            new_registry = document.set_command(new_registry, name, command)
        saved = _commit(registry_path, loaded.text, new_registry, changes, install, installer)
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
        chosen = _origins(spec, registry_path, _given(crontab), rolling_back=True)
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
        changes: list[_Change] = []
        for src, path in todo:
            mig = spec.migration_of(src)
            assert mig is not None
            changes.append(_restore_origin(spec, src, mig, path, do_install))
            remaining.pop(mig.origin, None)
        mode = spec.mode if remaining else first.previous_mode
        results = [replace(c.result, mode=Mode(mode)) for c in changes]
        if do_install:
            _check_installed(installer, changes[0].before, changes[0].path)
        if dry_run:
            return results
        new_registry = document.set_switches(
            loaded.text, name, mode, _in_source_order(spec, remaining)
        )
        saved = _commit(registry_path, loaded.text, new_registry, changes, do_install, installer)
        return [_written(r, b) for r, b in zip(results, saved, strict=True)]


@dataclass(frozen=True)
class _Change:
    """One crontab file's rewrite within a migrate or rollback."""

    path: Path
    before: CrontabText
    after: CrontabText
    result: SwitchResult


def _switch_origin(
    spec: JobSpec,
    src: Source,
    path: Path,
    to: str,
    target: Target,
    install: bool,
    file_format: str | None,
    together: Sequence[tuple[Source, Path]] = (),
    cron: str = "debian",
) -> _Change:
    name = spec.name
    if install and src.user is not None:
        raise UsageError(
            f"{path} is a system crontab (its lines name a user): cron reads it in place, "
            "so there is nothing to install — leave out --install"
        )
    mig = spec.migration_of(src)
    expected = src.text if mig is None else mig.line
    text = CrontabText.read(path)
    # A crontab installed with `crontab -` is a user's crontab: that is a fact too.
    _check_format(path, text, src.user, file_format or ("user" if install else None), cron)
    number = _locate(text, expected, src.line, path, name, "cron" if mig is None else spec.mode)
    notes: list[str] = []
    if number != src.line and mig is None:
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
    if len(spec.sources) > 1:
        now = {s for s, _ in together} | {src}
        rest = [s.label for s in spec.sources if s not in now and spec.migration_of(s) is None]
        if rest:
            notes.append(
                f"{len(rest)} other origin(s) still run it from cron ({', '.join(rest[:3])}): "
                "until they are switched too, each slot runs once per such host as before"
            )
    if to == Mode.ENQUEUE:
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
        mode=Mode(to),
        previous_mode=Mode(spec.mode),
        crontab=shown,
        line=number,
        before=text.lines[number - 1],
        after=new_line,
        diff=text.diff(after, shown),
        written=False,
        installed=install,
        notes=tuple(notes),
        run_as=src.user,
        origin=src.label,
    )
    return _Change(path, text, after, result)


def _restore_origin(
    spec: JobSpec, src: Source, mig: Migration, path: Path, install: bool
) -> _Change:
    name = spec.name
    if install and src.user is not None:
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
        mode=Mode(mig.previous_mode),
        previous_mode=Mode(spec.mode),
        crontab=shown,
        line=number,
        before=text.lines[number - 1],
        after=src.text,
        diff=text.diff(after, shown),
        written=False,
        installed=install,
        notes=tuple(notes),
        origin=src.label,
    )
    return _Change(path, text, after, result)


def _what_matters(spec: JobSpec, swallow: str) -> tuple[list[str], str | None]:
    """What changes for this line once the queue runs it, each with the registry edit that
    fixes it; and the command without what hides its failures: the success-forcing tail
    unless ``swallow`` is ``keep``, the ``/dev/null`` redirections too when it is ``all``."""
    from migrate_cron.analysis.work_rules import lock_wrapper
    from migrate_cron.migration.swallow import find, strip_swallow, strip_tail

    notes: list[str] = []
    command = spec.command or ""
    new_command = None
    hidden = find(command)
    if swallow == "all" and hidden.found:
        stripped = strip_swallow(command)
        new_command = stripped if stripped != command else None
        notes.append(
            f"--strip-swallow: the registry's command is now {stripped!r} (the crontab "
            "line keeps its text for rollback)"
            if new_command
            else f"the command hides failures ({', '.join(hidden.found)}) in a way that "
            f"cannot be cut out safely: edit `command` in [jobs.{spec.name}]"
        )
    elif swallow == "tail" and hidden.tail:
        new_command = strip_tail(command)
        if new_command is not None:
            notes.append(
                f"the command ended in `{hidden.tail}`, which reports success when it fails: "
                f"the queue would record `done`, never retry, never shelve it. The registry's "
                f"command is now {new_command!r} (the crontab line keeps its text for "
                "rollback); --keep-swallow keeps cron's behaviour"
            )
        else:
            notes.append(
                f"the command ends in `{hidden.tail}` in a way that cannot be cut out safely: "
                f"the queue would record every failure as `done` — edit `command` in "
                f"[jobs.{spec.name}]"
            )
    elif hidden.tail:
        notes.append(
            f"--keep-swallow: the command still ends in `{hidden.tail}`: a failed run is "
            "recorded `done`, never retried nor shelved, and `verify` says so"
        )
    if hidden.nulls and swallow != "all":
        notes.append(
            f"output goes to /dev/null ({', '.join(hidden.nulls)}): a failed attempt keeps no "
            "output to read — --strip-swallow removes the redirections"
        )
    if spec.timeout is None:
        notes.append(
            f"no timeout: a hung run holds its slot until someone kills it — add "
            f"`timeout = 3600` (seconds) to [jobs.{spec.name}]"
        )
    wrapper = lock_wrapper(command)
    if wrapper and spec.max_running is None:
        notes.append(
            f"the line guards itself with {wrapper}: add `concurrency = 1` and "
            f'`overlap = "skip"` to [jobs.{spec.name}] (one run at a time over every host), '
            "then drop the wrapper"
        )
    elif wrapper:
        notes.append(
            f"{wrapper} is redundant now: at most {spec.max_running} run(s) at once over every "
            "host; drop it from `command` when you like"
        )
    return notes, new_command


def _given(crontab: Path | str | Sequence[Path | str] | None) -> list[str]:
    if crontab is None:
        return []
    if isinstance(crontab, str | Path):
        return [str(crontab)]
    return [str(c) for c in crontab]


def _origins(
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


def _in_source_order(spec: JobSpec, switches: dict[str | None, Migration]) -> list[Migration]:
    order = {s.label: i for i, s in enumerate(spec.sources)}
    return sorted(switches.values(), key=lambda m: order.get(m.origin or "", 0))


# ------------------------------------------------------------------------ internals
def _check_format(
    path: Path, text: CrontabText, user: str | None, requested: str | None, cron: str = "debian"
) -> None:
    from migrate_cron.crontab.parser import parse_crontab

    parsed = parse_crontab(text.render(), str(path), format=requested or "auto", cron=cron)
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


def _locate(text: CrontabText, expected: str, hint: int, path: Path, name: str, mode: str) -> int:
    """The line number holding ``expected`` — at ``hint`` if it is still there, else its only
    occurrence — or a refusal showing what the registry expects and what the file has."""
    if text.line(hint) == expected:
        return hint
    found = text.find(expected)
    if len(found) == 1:
        return found[0]
    if mode == Mode.CRON:
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
    changes: Sequence[_Change],
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
    written: list[_Change] = []
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


def _written(result: SwitchResult, saved: Path) -> SwitchResult:
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
