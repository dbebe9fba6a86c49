"""One crontab file's line switched to the queue or restored, or the refusal saying why not.

Only the job's own line changes; a line that changed since the registry was generated is never
switched (the registry's ``source.text`` is what rollback restores, so it must be what the file
holds), and a switched line copied by hand is never restored (the copy would keep enqueueing).
Nothing here writes: the change is returned, for ``commit`` to write with the registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from migrate_cron.errors import MigrateCronError, UsageError
from migrate_cron.migration.crontab_file import CrontabText
from migrate_cron.migration.rewrite import enqueue_line, scheduler_line
from migrate_cron.migration.target import Target
from migrate_cron.registry import JobSpec, Migration, Source
from migrate_cron.vocabulary import Mode


class Refused(MigrateCronError):
    """The switch would be unsafe; nothing was changed. The message says what to do."""


class AlreadyThere(MigrateCronError):
    """Nothing to do; the CLI says so and exits 0."""

    exit_code = 0


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
class LineChange:
    """One crontab file's rewrite within a migrate or rollback."""

    path: Path
    before: CrontabText
    after: CrontabText
    result: SwitchResult


def switch_origin(
    spec: JobSpec,
    src: Source,
    path: Path,
    to: str,
    target: Target,
    install: bool,
    file_format: str | None,
    together: Sequence[tuple[Source, Path]] = (),
    cron: str = "debian",
) -> LineChange:
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
    return LineChange(path, text, after, result)


def restore_origin(
    spec: JobSpec, src: Source, mig: Migration, path: Path, install: bool
) -> LineChange:
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
    return LineChange(path, text, after, result)


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
