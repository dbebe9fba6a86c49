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
- lines that are already switched (our ``enqueue`` command or scheduler marker) are skipped;
- a line generation refuses (it never worked under cron, or its zone is not known) gets no
  entry (REFUSED); one registered earlier keeps its entry, and the action says why it would
  be refused now.

- the same line on another host or in another file is another origin of the same job
  (JOINED): ``[jobs.NAME.source]`` becomes a ``[[jobs.NAME.sources]]`` array.

Mode changes (``migrate`` / ``rollback``) touch only ``mode`` and the ``migration`` table(s)
(``registry.document``). What is proposed and what came of it are ``registry.proposal``'s
values; crontab paths as the registry writes them, ``registry.paths``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from migrate_cron.registry.appended_entries import AppendedEntries
from migrate_cron.registry.document import job_table, jobs_table, load_document
from migrate_cron.registry.entry_tables import (
    add_origin,
    fill,
    new_entry,
    source_table,
    update_entry,
)
from migrate_cron.registry.entry_text import entry_text
from migrate_cron.registry.naming import registry_name
from migrate_cron.registry.paths import CrontabPaths
from migrate_cron.registry.proposal import (
    CHANGED,
    GONE,
    JOINED,
    KEPT,
    MOVED,
    NEW,
    REFUSED,
    SWITCHED,
    UPDATED,
    GeneratedJob,
    MergeAction,
    Refusal,
)
from migrate_cron.registry.same_job import SameJobs
from migrate_cron.registry.spec import Source
from migrate_cron.vocabulary import Mode

HEADER = """\
migrate-cron registry: one [jobs.NAME] per crontab line (see `migrate-cron generate registry`).
Edit freely: comments, policy, timeout, max_attempts stay when you re-run generate. A name is
the job's kind in the queue: generate never changes one. [jobs.NAME.source] is the original
line, byte for byte: `migrate-cron rollback NAME` puts it back.\
"""


@dataclass(frozen=True)
class _Known:
    """One origin of a job already in the registry."""

    name: str
    file: str
    line: int
    text: str
    mode: str
    migrated_line: str | None
    #: Its place in ``[[jobs.NAME.sources]]``; None for the single ``[jobs.NAME.source]``.
    index: int | None = None

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.name, self.index)


def merge(
    existing: str | None,
    proposed: Sequence[GeneratedJob],
    files: Iterable[str],
    registry_dir: Path,
    *,
    force: bool = False,
    crontab_lines: Callable[[str], Iterable[str]],
) -> tuple[str, list[MergeAction]]:
    """The registry text with ``proposed`` merged in, and what happened to each origin.

    An origin is matched by its file and text. A proposed job whose lines are partly known
    joins the known job (its new lines become more origins of it); known jobs are never
    merged or renamed by a tool. ``crontab_lines`` reads a crontab file's lines (whether a
    switched job's rewritten line is still there); the caller reads crontabs as it writes
    them, this module knows only the registry."""
    files = list(files)
    paths = CrontabPaths(registry_dir, crontab_lines)
    text, actions = _merge(existing, proposed, files, paths, force, as_text=True)
    if text is None:  # where the new entries go could not be told from the text: as tables
        text, actions = _merge(existing, proposed, files, paths, force, as_text=False)
    assert text is not None
    return text, actions


def _merge(
    existing: str | None,
    proposed: Sequence[GeneratedJob],
    files: Iterable[str],
    paths: CrontabPaths,
    force: bool,
    *,
    as_text: bool,
) -> tuple[str | None, list[MergeAction]]:
    """``merge``, with the new entries written as text (``AppendedEntries``) or built as
    tables; None for the text when it has to be tables."""
    doc = load_document(existing)
    jobs = jobs_table(doc)
    appended = AppendedEntries(jobs)
    known = _known(jobs, paths)
    claimed: set[tuple[str, int | None]] = set()
    actions: list[MergeAction] = []
    matched: dict[tuple[int, int], _Known] = {}
    # Looked up by key, never scanned: a 10,000-line crontab merges in linear time.
    by_text: dict[tuple[str, str], deque[_Known]] = {}
    by_line: dict[tuple[str, int], list[_Known]] = {}
    for k in sorted(known, key=lambda k: k.line):
        by_text.setdefault((k.file, k.text), deque()).append(k)
        if k.migrated_line is None:
            by_line.setdefault((k.file, k.line), []).append(k)
    # Pass 1: the same text in the same file is the same origin (maybe moved); the first
    # one by line number when the file holds the line more than once.
    for i, g in enumerate(proposed):
        for j, src in enumerate(g.sources):
            same = by_text.get((src.file, src.text))
            if same:
                k = same.popleft()
                matched[(i, j)] = k
                claimed.add(k.key)
    # Lines that are our own rewrites belong to the job that wrote them.
    switched_lines = {(k.file, k.migrated_line): k for k in known if k.migrated_line}
    same_jobs = SameJobs(jobs, [(k.name, k.file) for k in known])
    names = set(str(n) for n in jobs)
    for i, g in enumerate(proposed):
        if g.refusal is not None:
            actions.extend(_refused(jobs, g, g.refusal, matched, i, paths))
            continue
        owner = next(
            (matched[(i, j)].name for j in range(len(g.sources)) if (i, j) in matched), None
        )
        fresh: list[Source] = []
        for j, src in enumerate(g.sources):
            file, line = src.file, src.line
            rel = paths.display(file, src.host)
            if (i, j) in matched:
                k = matched[(i, j)]
                if k.line != line:
                    _origin(jobs, k)["line"] = line
                    actions.append(MergeAction(k.name, MOVED, rel, line, f"was line {k.line}"))
                else:
                    actions.append(MergeAction(k.name, KEPT, rel, line))
                continue
            ours = switched_lines.get((file, src.text))
            if ours is not None or _is_our_enqueue(g.command):
                name = ours.name if ours else "?"
                if ours is not None:
                    claimed.add(ours.key)
                actions.append(
                    MergeAction(name, SWITCHED, rel, line, "already switched by migrate-cron")
                )
                continue
            edited = next((k for k in by_line.get((file, line), ()) if k.key not in claimed), None)
            if edited is not None and force and edited.index is not None:
                # One origin of a multi-origin job changed: the others still run the old
                # line, so the changed one leaves the job and becomes a job of its own.
                _remove_origin(jobs, edited)
                claimed.add(edited.key)
                actions.append(
                    MergeAction(
                        edited.name,
                        UPDATED,
                        rel,
                        line,
                        f"the line changed here only: it leaves {edited.name} (whose other "
                        "origins keep the old line) for a job of its own",
                        old_text=edited.text,
                        new_text=src.text,
                    )
                )
                fresh.append(src)
                continue
            if edited is not None:
                actions.append(_edited(jobs, edited, g, src, rel, paths, force))
                claimed.add(edited.key)
                continue
            if owner is not None:
                add_origin(job_table(jobs, owner), src, paths)
                actions.append(
                    MergeAction(
                        owner, JOINED, rel, line, "the same line as another origin: one job"
                    )
                )
                continue
            fresh.append(src)
        if fresh and owner is None:
            # Its other origins may be switched already (their lines now only enqueue, so
            # the analysis could not pair them): the same job by what it runs joins.
            owner = same_jobs.find(g, fresh)
            if owner is not None:
                for src in fresh:
                    add_origin(job_table(jobs, owner), src, paths)
                    where = paths.display(src.file, src.host)
                    actions.append(
                        MergeAction(owner, JOINED, where, src.line, "the same job, another origin")
                    )
                fresh = []
        if fresh:
            name = registry_name(g.name, names)
            names.add(name)
            entry = replace(g, sources=tuple(fresh))
            if as_text:
                appended.add(entry_text(name, entry, paths.stored))
            else:
                jobs.append(name, new_entry(entry, paths))
            for src in fresh:
                detail = f"one job for {len(fresh)} origins" if len(fresh) > 1 else ""
                where = paths.display(src.file, src.host)
                actions.append(MergeAction(name, NEW, where, src.line, detail))
    wanted = {str(Path(f).resolve()) for f in files}
    for k in known:
        if k.key in claimed or k.file not in wanted:
            continue
        if k.migrated_line is not None and k.migrated_line in paths.lines(k.file):
            # a scheduler marker is a comment, so the parser proposed nothing for it
            actions.append(
                MergeAction(
                    k.name,
                    SWITCHED,
                    paths.display(k.file),
                    k.line,
                    f"already switched by migrate-cron (mode {k.mode})",
                )
            )
            continue
        detail = (
            "its line is no longer in the file; entry kept (remove it by hand once its "
            "queue is empty)"
        )
        if k.mode != Mode.CRON:
            detail = f"mode {k.mode}: its switched line is no longer in the file; entry kept"
        actions.append(MergeAction(k.name, GONE, paths.display(k.file), k.line, detail))
    if "jobs" not in doc:
        if not existing:
            for text in HEADER.splitlines():
                doc.add(tomlkit.comment(text))
            doc.add(tomlkit.nl())
        doc.append("jobs", jobs)
    return (appended.render(doc) if as_text else tomlkit.dumps(doc)), actions


def _refused(
    jobs: Table,
    g: GeneratedJob,
    refusal: Refusal,
    matched: Mapping[tuple[int, int], _Known],
    index: int,
    paths: CrontabPaths,
) -> list[MergeAction]:
    """A refused line: no new entry; an entry registered earlier (same text) stays, only its
    line number follows the file."""
    out = []
    for j, src in enumerate(g.sources):
        rel = paths.display(src.file, src.host)
        k = matched.get((index, j))
        if k is None:
            where = refusal.file or rel
            out.append(MergeAction(g.name, REFUSED, where, src.line, refusal.text))
            continue
        status = KEPT
        if k.line != src.line:
            _origin(jobs, k)["line"] = src.line
            status = MOVED
        why = f"registered earlier, entry kept; now it would be refused: {refusal.reason}"
        out.append(MergeAction(k.name, status, rel, src.line, why))
    return out


def _edited(
    jobs: Table,
    k: _Known,
    g: GeneratedJob,
    src: Source,
    rel: str,
    paths: CrontabPaths,
    force: bool,
) -> MergeAction:
    """A known origin whose line changed since generation: a conflict, taken with --force."""
    if not force:
        return MergeAction(
            k.name,
            CHANGED,
            rel,
            src.line,
            "the line changed since the registry was generated; left as it was "
            "(re-run with --force to take the new line, keeping the name)",
            old_text=k.text,
            new_text=src.text,
        )
    table = job_table(jobs, k.name)
    if k.index is None:
        update_entry(table, replace(g, sources=(src,)), paths)
    else:
        fill(table, g)
        table["sources"][k.index] = source_table(src, paths)
    detail = "took the changed line, name kept"
    fresh = registry_name(g.name, [])
    if fresh != k.name and not k.name.startswith(fresh):
        detail += f" (a new line would be named {fresh!r}; rename by hand if you like)"
    return MergeAction(k.name, UPDATED, rel, src.line, detail, old_text=k.text, new_text=src.text)


def _known(jobs: Table, paths: CrontabPaths) -> list[_Known]:
    out = []
    for name, table in jobs.items():
        if not hasattr(table, "get"):
            continue
        single = table.get("source")
        origins: list[tuple[Any, int | None]] = (
            [(single, None)]
            if single is not None
            else [(s, i) for i, s in enumerate(table.get("sources") or [])]
        )
        switches = _switches(table)
        for src, index in origins:
            if not src or "file" not in src or "text" not in src:
                continue
            label = f"{src['host']}:{src['file']}" if src.get("host") else str(src["file"])
            mig = switches.get(label) or (switches.get(None) if index in (None, 0) else None)
            out.append(
                _Known(
                    name=str(name),
                    file=paths.resolved(str(src["file"])),
                    line=int(src.get("line", 0)),
                    text=str(src["text"]),
                    mode=str(table.get("mode", "cron")),
                    migrated_line=str(mig["line"]) if mig and "line" in mig else None,
                    index=index,
                )
            )
    return out


def _switches(table: Any) -> dict[str | None, Any]:
    """A job's switches by the label of the origin each rewrote (None: its only origin)."""
    single = table.get("migration")
    if single is not None:
        return {single.get("origin"): single}
    return {m.get("origin"): m for m in table.get("migrations") or []}


def _origin(jobs: Table, k: _Known) -> Any:
    table = job_table(jobs, k.name)
    return table["source"] if k.index is None else table["sources"][k.index]


def _remove_origin(jobs: Table, k: _Known) -> None:
    """Take origin ``k`` out of its job's ``[[sources]]`` (it was not switched)."""
    sources = job_table(jobs, k.name)["sources"]
    del sources[k.index]


def _is_our_enqueue(command: str) -> bool:
    """True for a command ``migrate`` wrote: ``…/migrate-cron enqueue NAME …``."""
    import shlex

    if "enqueue" not in command:  # vocabulary: the command, not the mode
        return False  # most lines: no need to split them into words
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return (
        len(words) >= 2
        and words[0].endswith("migrate-cron")
        and words[1] == "enqueue"  # vocabulary: the command, not the mode
    )
