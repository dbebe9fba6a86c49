"""The registry as a document (tomlkit): read so every comment and key order a person wrote
stays, a job's table found in it, and the edits ``migrate`` and ``rollback`` make (a job's
mode, its switches, its command)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tomlkit
from tomlkit.items import Table

from migrate_cron.errors import ConfigError
from migrate_cron.registry.spec import Migration


def load_document(text: str | None) -> tomlkit.TOMLDocument:
    if not text:
        return tomlkit.document()
    try:
        return tomlkit.parse(text)
    except Exception as exc:
        raise ConfigError(f"the registry is not valid TOML: {exc}") from None


def jobs_table(doc: tomlkit.TOMLDocument) -> Table:
    jobs = doc.get("jobs")
    if jobs is None:
        return tomlkit.table(is_super_table=True)
    if not isinstance(jobs, Table):
        raise ConfigError("the registry's 'jobs' must be a table of [jobs.NAME] tables")
    return jobs


def job_table(jobs: Table, name: str) -> Any:
    if name not in jobs:
        raise ConfigError(f"no job {name!r} in the registry")
    return jobs[name]


def set_switches(existing: str, name: str, mode: str, migrations: Sequence[Migration]) -> str:
    """The registry text with job ``name`` in ``mode`` and its switches set: one
    ``[jobs.NAME.migration]`` for a job with one origin, else one ``[[jobs.NAME.migrations]]``
    per switched origin; none removes them. Everything else stays as written."""
    doc = load_document(existing)
    table = job_table(jobs_table(doc), name)
    table["mode"] = mode
    for key in ("migration", "migrations"):
        if key in table:
            del table[key]
    if len(migrations) == 1 and "sources" not in table:
        table.append("migration", _migration_table(migrations[0], with_origin=False))
    elif migrations:
        many = tomlkit.aot()
        for m in migrations:
            many.append(_migration_table(m, with_origin=True))
        table.append("migrations", many)
    return tomlkit.dumps(doc)


def set_command(existing: str, name: str, command: str) -> str:
    """The registry text with job ``name``'s ``command`` replaced (comments kept)."""
    doc = load_document(existing)
    job_table(jobs_table(doc), name)["command"] = command
    return tomlkit.dumps(doc)


def _migration_table(migration: Migration, *, with_origin: bool) -> Table:
    m = tomlkit.table()
    if with_origin and migration.origin is not None:
        m["origin"] = migration.origin
    m["previous_mode"] = migration.previous_mode
    m["crontab"] = migration.crontab
    m["line"] = migration.line
    m["switched_at"] = migration.switched_at
    m["installed"] = migration.installed
    if not with_origin:
        m.add(tomlkit.nl())
    return m
