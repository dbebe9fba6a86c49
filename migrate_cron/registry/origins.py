"""A job's origins and switches: the crontab lines it stands for (``[jobs.NAME.source]`` or
``[[jobs.NAME.sources]]``) and what ``migrate`` rewrote (``[jobs.NAME.migration]`` or
``[[jobs.NAME.migrations]]``), checked so ``rollback`` and ``verify`` can trust them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from migrate_cron.registry.keys import TYPE_NAMES, shown
from migrate_cron.registry.spec import MODES, Migration, Source

#: A user name as useradd and cron's user field take it (never starting with '-').
USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}\$?")


def sources_of(t: Mapping[str, Any], bad: Any) -> tuple[Source, ...]:
    if "source" in t and "sources" in t:
        raise bad("sources", "set either [source] (one origin) or [[sources]], not both")
    if "source" in t:
        return (_source(t["source"], "source", bad),)
    raw = t.get("sources", [])
    sources = tuple(_source(item, "sources", bad) for item in raw)
    labels = [s.label for s in sources]
    for label in labels:
        if labels.count(label) > 1:
            raise bad("sources", f"two origins in {label}: one job has one line per file")
    return sources


#: A source table's keys: the type each must have, and whether it is required.
_SOURCE_KEYS: dict[str, tuple[type, bool]] = {
    "file": (str, True),
    "line": (int, True),
    "text": (str, True),
    "user": (str, False),
    "host": (str, False),
}


def _source(raw: Any, key: str, bad: Any) -> Source:
    if not isinstance(raw, Mapping):
        raise bad(key, "each origin must be a table with file, line, text")
    for field_name, (kind, required) in _SOURCE_KEYS.items():
        if field_name not in raw:
            if required:
                raise bad(key, f"missing {field_name!r} (needs file, line, text)")
            continue
        value = raw[field_name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise bad(key, f"{field_name} must be {TYPE_NAMES[kind]}, not {shown(value)}")
    unknown = sorted(set(raw) - set(_SOURCE_KEYS))
    if unknown:
        raise bad(key, f"unknown key(s) {unknown} (an origin has file, line, text, user, host)")
    if raw["line"] < 1:
        raise bad(key, f"line must be a line number (1 or more), not {raw['line']}")
    user = raw.get("user")
    if user is not None and not USER_NAME.fullmatch(user):
        raise bad(key, f"user {user!r} is not a user name")
    return Source(
        file=raw["file"], line=raw["line"], text=raw["text"], user=user, host=raw.get("host")
    )


def migrations_of(
    t: Mapping[str, Any], sources: tuple[Source, ...], bad: Any
) -> tuple[Migration, ...]:
    if "migration" in t and "migrations" in t:
        raise bad("migrations", "set either [migration] or [[migrations]], not both")
    raw = [t["migration"]] if "migration" in t else t.get("migrations", [])
    migrations = tuple(_migration(item, bad) for item in raw)
    if len(migrations) > 1 and any(m.origin is None for m in migrations):
        raise bad("migrations", "with several switches each must name its origin")
    labels = {s.label for s in sources}
    for m in migrations:
        if m.origin is not None and m.origin not in labels:
            raise bad("migrations", f"origin {m.origin!r} is none of the job's sources")
    return migrations


def _migration(raw: Any, bad: Any) -> Migration:
    if not isinstance(raw, Mapping):
        raise bad("migration", "must be a table")
    try:
        previous, crontab, line = raw["previous_mode"], raw["crontab"], raw["line"]
        switched_at = raw["switched_at"]
    except KeyError as exc:
        raise bad(
            "migration",
            f"missing {exc.args[0]!r} (needs previous_mode, crontab, line, switched_at)",
        ) from None
    if previous not in MODES:
        raise bad("migration", f"previous_mode {previous!r} is not one of {', '.join(MODES)}")
    if not isinstance(switched_at, datetime) or switched_at.tzinfo is None:
        raise bad("migration", "switched_at must be a TOML date-time with an offset")
    installed, origin = raw.get("installed", False), raw.get("origin")
    for field_name, value, ok in (
        ("crontab", crontab, isinstance(crontab, str)),
        ("line", line, isinstance(line, str)),
        ("installed", installed, isinstance(installed, bool)),
        ("origin", origin, origin is None or isinstance(origin, str)),
    ):
        if not ok:
            want = "true or false" if field_name == "installed" else "a string"
            raise bad("migration", f"{field_name} must be {want}, not {shown(value)}")
    return Migration(
        previous_mode=previous,
        crontab=crontab,
        line=line,
        switched_at=switched_at,
        installed=installed,
        origin=origin,
    )
