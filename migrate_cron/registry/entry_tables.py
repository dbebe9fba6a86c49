"""A job's tables built for the registry document (tomlkit): a new entry, an entry updated to
its line's new text, one more origin (``[jobs.NAME.source]`` turned into a
``[[jobs.NAME.sources]]`` array), each origin's table with its path as the registry stores it.
``entry_text`` writes the same entry as text when the document allows it."""

from __future__ import annotations

from typing import Any

import tomlkit
from tomlkit.items import Table

from migrate_cron.registry.paths import CrontabPaths
from migrate_cron.registry.proposal import GeneratedJob
from migrate_cron.registry.spec import Source


def add_origin(table: Any, src: Source, paths: CrontabPaths) -> None:
    """One more line for a job: its one ``[source]`` becomes a ``[[sources]]`` array (a
    single switch made before then names the origin it rewrote)."""
    if "source" in table:
        first = table["source"]
        label = f"{first['host']}:{first['file']}" if first.get("host") else str(first["file"])
        many = tomlkit.aot()
        many.append(copy_table(first))
        del table["source"]
        table.append("sources", many)
        single = table.get("migration")
        if single is not None:
            migration = copy_table(single)
            migration["origin"] = label
            del table["migration"]
            switches = tomlkit.aot()
            switches.append(migration)
            table.append("migrations", switches)
    if "sources" not in table:
        table.append("sources", tomlkit.aot())
    table["sources"].append(source_table(src, paths))


def copy_table(item: Any) -> Table:
    t = tomlkit.table()
    for key, value in item.items():
        t[key] = value
    return t


def new_entry(g: GeneratedJob, paths: CrontabPaths) -> Table:
    """A new entry as a table (``entry_text`` writes the same entry as text)."""
    t = tomlkit.table()
    if g.note:
        for line in g.note.splitlines():
            t.add(tomlkit.comment(line))
    fill(t, g)
    t["mode"] = "cron"
    if len(g.sources) == 1:
        t.append("source", source_table(g.source, paths))
    else:
        many = tomlkit.aot()
        for src in g.sources:
            many.append(source_table(src, paths))
        t.append("sources", many)
    return t


def update_entry(t: Any, g: GeneratedJob, paths: CrontabPaths) -> None:
    fill(t, g)
    for key in ("stdin", "cwd", "cwd_fallback", "user"):
        if getattr(g, key) is None and key in t:
            del t[key]
    del t["source"]
    t.append("source", source_table(g.source, paths))


def fill(t: Any, g: GeneratedJob) -> None:
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
    if g.cwd_fallback is not None:
        t["cwd_fallback"] = g.cwd_fallback
    if g.stdin is not None:
        t["stdin"] = g.stdin
    if "policy" not in t:
        t["policy"] = g.policy
    if g.concurrency is not None and "concurrency" not in t:
        t["concurrency"] = g.concurrency
    if g.overlap is not None and "overlap" not in t:
        t["overlap"] = g.overlap


def source_table(src: Source, paths: CrontabPaths) -> Table:
    s = tomlkit.table()
    s["file"] = paths.stored(src.file)
    s["line"] = src.line
    s["text"] = src.text
    if src.user is not None:
        s["user"] = src.user
    if src.host is not None:
        s["host"] = src.host
    return s
