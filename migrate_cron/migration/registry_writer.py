"""Changes to ``migrate-cron.toml`` that keep everything a person wrote in it.

The registry is code under review: people add comments, tune ``policy`` or ``timeout``, rename
a job. So it is edited as a document (tomlkit), never re-serialised from parsed values, and
``generate registry`` merges instead of rewriting:

- a crontab line already in the registry (same file, same text) keeps its entry untouched —
  and therefore its name; if it moved, only ``source.line`` follows it;
- a line whose text changed since generation is a *conflict*: reported with both texts and left
  alone unless ``--force``, which takes the new line but keeps the name (a name is the queue's
  job kind; it is never changed by a tool, so renames are never silent);
- a line the registry does not know gets a new entry with a derived, unique name;
- an entry whose line is gone is reported and kept (its queue rows may still need it);
- lines that are already switched (our ``enqueue`` command or scheduler marker) are skipped.

Mode changes (``migrate`` / ``rollback``) touch only ``mode`` and the ``migration`` table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from migrate_cron.errors import ConfigError
from migrate_cron.migration.naming import registry_name
from migrate_cron.registry import Migration, Source

HEADER = """\
migrate-cron registry: one [jobs.NAME] per crontab line (see `migrate-cron generate registry`).
Edit freely: comments, policy, timeout, max_attempts stay when you re-run generate. A name is
the job's kind in the queue: generate never changes one. [jobs.NAME.source] is the original
line, byte for byte: `migrate-cron rollback NAME` puts it back.\
"""

NEW = "new"
KEPT = "kept"
MOVED = "moved"
CHANGED = "changed"
UPDATED = "updated"
GONE = "gone"
SWITCHED = "switched"


@dataclass(frozen=True)
class GeneratedJob:
    """A registry entry proposed for one crontab job line (``source.file`` is absolute);
    ``name`` is the readable name the analysis gave the line (made unique on merge)."""

    name: str
    command: str
    schedule: str
    timezone: str
    source: Source
    user: str | None = None
    shell: str = "/bin/sh"
    env: Mapping[str, str] = field(default_factory=dict)
    stdin: str | None = None
    cwd: str | None = None
    policy: str = "skip"
    note: str = ""


@dataclass(frozen=True)
class MergeAction:
    """What ``generate registry`` did with one job: ``status`` is one of NEW, KEPT, MOVED,
    CHANGED (conflict, left alone), UPDATED (conflict taken with --force), GONE, SWITCHED."""

    name: str
    status: str
    file: str
    line: int
    detail: str = ""
    old_text: str | None = None
    new_text: str | None = None


@dataclass(frozen=True)
class _Known:
    name: str
    file: str
    line: int
    text: str
    mode: str
    migrated_line: str | None


def load_document(text: str | None) -> tomlkit.TOMLDocument:
    if not text:
        return tomlkit.document()
    try:
        return tomlkit.parse(text)
    except Exception as exc:
        raise ConfigError(f"the registry is not valid TOML: {exc}") from None


def merge(
    existing: str | None,
    proposed: Sequence[GeneratedJob],
    files: Iterable[str],
    registry_dir: Path,
    *,
    force: bool = False,
) -> tuple[str, list[MergeAction]]:
    """The registry text with ``proposed`` merged in, and what happened to each job."""
    doc = load_document(existing)
    jobs = _jobs_table(doc)
    known = _known(jobs, registry_dir)
    claimed: set[str] = set()
    actions: list[MergeAction] = []
    matched: dict[int, _Known] = {}
    by_text = sorted(known, key=lambda k: k.line)
    # Pass 1: the same text in the same file is the same job (maybe moved).
    for i, g in enumerate(proposed):
        for k in by_text:
            if k.name not in claimed and k.file == g.source.file and k.text == g.source.text:
                matched[i] = k
                claimed.add(k.name)
                break
    # Lines that are our own rewrites belong to the job that wrote them.
    switched_lines = {(k.file, k.migrated_line): k for k in known if k.migrated_line}
    names = set(str(n) for n in jobs)
    for i, g in enumerate(proposed):
        file, line = g.source.file, g.source.line
        rel = _display(file, registry_dir)
        if i in matched:
            k = matched[i]
            if k.line != line:
                _table(jobs, k.name)["source"]["line"] = line
                actions.append(MergeAction(k.name, MOVED, rel, line, f"was line {k.line}"))
            else:
                actions.append(MergeAction(k.name, KEPT, rel, line))
            continue
        owner = switched_lines.get((file, g.source.text))
        if owner is not None or _is_our_enqueue(g.command):
            name = owner.name if owner else "?"
            claimed.add(name)
            actions.append(
                MergeAction(name, SWITCHED, rel, line, "already switched by migrate-cron")
            )
            continue
        edited = next(
            (
                k
                for k in known
                if k.name not in claimed and k.file == file and k.line == line and k.mode == "cron"
            ),
            None,
        )
        if edited is not None:
            k = edited
            claimed.add(k.name)
            if not force:
                actions.append(
                    MergeAction(
                        k.name,
                        CHANGED,
                        rel,
                        line,
                        "the line changed since the registry was generated; left as it was "
                        "(re-run with --force to take the new line, keeping the name)",
                        old_text=k.text,
                        new_text=g.source.text,
                    )
                )
                continue
            _update_entry(_table(jobs, k.name), g, registry_dir)
            detail = "took the changed line, name kept"
            fresh = registry_name(g.name, [])
            if fresh != k.name and not k.name.startswith(fresh):
                detail += f" (a new line would be named {fresh!r}; rename by hand if you like)"
            actions.append(
                MergeAction(
                    k.name, UPDATED, rel, line, detail, old_text=k.text, new_text=g.source.text
                )
            )
            continue
        name = registry_name(g.name, names)
        names.add(name)
        claimed.add(name)
        jobs.append(name, _new_entry(g, registry_dir))
        actions.append(MergeAction(name, NEW, rel, line))
    wanted = {str(Path(f).resolve()) for f in files}
    for k in known:
        if k.name in claimed or k.file not in wanted:
            continue
        if k.migrated_line is not None and k.migrated_line in _lines(k.file):
            # a scheduler marker is a comment, so the parser proposed nothing for it
            actions.append(
                MergeAction(
                    k.name,
                    SWITCHED,
                    _display(k.file, registry_dir),
                    k.line,
                    f"already switched by migrate-cron (mode {k.mode})",
                )
            )
            continue
        detail = (
            "its line is no longer in the file; entry kept (remove it by hand once its "
            "queue is empty)"
        )
        if k.mode != "cron":
            detail = f"mode {k.mode}: its switched line is no longer in the file; entry kept"
        actions.append(MergeAction(k.name, GONE, _display(k.file, registry_dir), k.line, detail))
    if "jobs" not in doc:
        if not existing:
            for text in HEADER.splitlines():
                doc.add(tomlkit.comment(text))
            doc.add(tomlkit.nl())
        doc.append("jobs", jobs)
    return tomlkit.dumps(doc), actions


def set_mode(existing: str, name: str, mode: str, migration: Migration | None) -> str:
    """The registry text with job ``name`` in ``mode`` and its ``migration`` table set
    (or removed when None). Everything else stays as written."""
    doc = load_document(existing)
    table = _table(_jobs_table(doc), name)
    table["mode"] = mode
    if migration is None:
        if "migration" in table:
            del table["migration"]
    else:
        m = tomlkit.table()
        m["previous_mode"] = migration.previous_mode
        m["crontab"] = migration.crontab
        m["line"] = migration.line
        m["switched_at"] = migration.switched_at
        m["installed"] = migration.installed
        m.add(tomlkit.nl())
        if "migration" in table:
            del table["migration"]
        table.append("migration", m)
    return tomlkit.dumps(doc)


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


# ------------------------------------------------------------------------ internals
def _jobs_table(doc: tomlkit.TOMLDocument) -> Table:
    jobs = doc.get("jobs")
    if jobs is None:
        return tomlkit.table(is_super_table=True)
    if not isinstance(jobs, Table):
        raise ConfigError("the registry's 'jobs' must be a table of [jobs.NAME] tables")
    return jobs


def _table(jobs: Table, name: str) -> Any:
    if name not in jobs:
        raise ConfigError(f"no job {name!r} in the registry")
    return jobs[name]


def _known(jobs: Table, registry_dir: Path) -> list[_Known]:
    out = []
    for name, table in jobs.items():
        src = table.get("source") if hasattr(table, "get") else None
        if not src or "file" not in src or "text" not in src:
            continue
        mig = table.get("migration") or {}
        out.append(
            _Known(
                name=str(name),
                file=str(source_path(str(src["file"]), registry_dir).resolve()),
                line=int(src.get("line", 0)),
                text=str(src["text"]),
                mode=str(table.get("mode", "cron")),
                migrated_line=str(mig["line"]) if "line" in mig else None,
            )
        )
    return out


def _new_entry(g: GeneratedJob, registry_dir: Path) -> Table:
    t = tomlkit.table()
    if g.note:
        for line in g.note.splitlines():
            t.add(tomlkit.comment(line))
    _fill(t, g, registry_dir)
    t["mode"] = "cron"
    t.append("source", _source_table(g.source, registry_dir))
    return t


def _update_entry(t: Any, g: GeneratedJob, registry_dir: Path) -> None:
    _fill(t, g, registry_dir)
    for key in ("stdin", "cwd", "user"):
        if getattr(g, key) is None and key in t:
            del t[key]
    del t["source"]
    t.append("source", _source_table(g.source, registry_dir))


def _fill(t: Any, g: GeneratedJob, registry_dir: Path) -> None:
    t["schedule"] = g.schedule
    t["timezone"] = g.timezone
    t["command"] = g.command
    t["shell"] = g.shell
    if g.user is not None:
        t["user"] = g.user  # the worker runs the command as this user, as cron did
    env = tomlkit.inline_table()
    env.update(dict(g.env))
    t["env"] = env
    if g.cwd is not None:
        t["cwd"] = g.cwd
    if g.stdin is not None:
        t["stdin"] = g.stdin
    if "policy" not in t:
        t["policy"] = g.policy


def _source_table(src: Source, registry_dir: Path) -> Table:
    s = tomlkit.table()
    s["file"] = stored_path(Path(src.file), registry_dir)
    s["line"] = src.line
    s["text"] = src.text
    if src.user is not None:
        s["user"] = src.user
    return s


def _display(file: str, registry_dir: Path) -> str:
    return stored_path(Path(file), registry_dir)


def _lines(file: str) -> set[str]:
    from migrate_cron.migration.crontab_file import CrontabText

    try:
        return set(CrontabText.read(file).lines)
    except Exception:
        return set()


def _is_our_enqueue(command: str) -> bool:
    """True for a command ``migrate`` wrote: ``…/migrate-cron enqueue NAME …``."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return len(words) >= 2 and words[0].endswith("migrate-cron") and words[1] == "enqueue"
