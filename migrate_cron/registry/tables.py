"""``[tables.NAME]``: a business table workers claim rows from directly, checked so that every
name that goes into SQL is a plain identifier and the four status values differ."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from migrate_cron.errors import ConfigError
from migrate_cron.registry.job_entry import parse_job
from migrate_cron.registry.spec import MAX_SECONDS, TableSpec

TABLE_KEYS = {
    "table": str,
    "key": str,
    "status": str,
    "ready": (str, int),
    "processing": (str, int),
    "done": (str, int),
    "failed": (str, int),
    "order_by": str,
    "batch": int,
    "lease": (int, float),
}
_TABLE_RUN = ("command", "handler", "shell", "env", "cwd", "cwd_fallback", "timeout",
              "max_attempts", "backoff", "user")  # fmt: skip
_STATUS_KEYS = ("ready", "processing", "done", "failed")
#: Identifiers go into SQL as quoted names: plain ones only, so no quoting rule of any
#: dialect matters (PostgreSQL cuts names at 63 bytes).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
MAX_TABLE_BATCH = 10_000


def parse_tables(path: str, raw: Any, defaults: Mapping[str, Any]) -> dict[str, TableSpec]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [tables] must be a table of [tables.NAME] tables")
    inherited = {k: v for k, v in defaults.items() if k in _TABLE_RUN}
    return {name: _table(path, name, body, inherited) for name, body in raw.items()}


def _table(path: str, name: str, t: Any, inherited: Mapping[str, Any]) -> TableSpec:
    where = f"table {name!r}"

    def bad(key: str, reason: str) -> ConfigError:
        return ConfigError(f"{path}: {where}: key {key!r}: {reason}")

    if not isinstance(t, dict):
        raise ConfigError(f"{path}: {where}: must be a table [tables.{name}]")
    own = {k: v for k, v in t.items() if k in TABLE_KEYS}
    for key, value in own.items():
        expected = TABLE_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, expected):  # type: ignore[arg-type]
            if isinstance(expected, type):
                raise bad(key, f"must be a {expected.__name__}")
            raise bad(key, "must be text or an integer" if key in _STATUS_KEYS else "a number")
    unknown = sorted(k for k in t if k not in TABLE_KEYS and k not in _TABLE_RUN)
    if unknown:
        raise ConfigError(f"{path}: {where}: unknown key(s) {unknown}")
    for key in ("key", "status", *_STATUS_KEYS):
        if key not in own:
            raise bad(key, "missing (a table needs key, status, ready, processing, done, failed)")
    for key in ("table", "key", "status", "order_by"):
        value = own.get(key, name if key == "table" else None)
        if value is not None and not _IDENTIFIER.fullmatch(value):
            raise bad(key, f"{value!r} is not a plain SQL name (letters, digits, _)")
    values = [own[k] for k in _STATUS_KEYS]
    if len(set(values)) != len(values):
        raise bad("ready", "ready, processing, done and failed must be four different values")
    batch = own.get("batch", 10)
    if not 1 <= batch <= MAX_TABLE_BATCH:
        raise bad("batch", f"must be between 1 and {MAX_TABLE_BATCH}")
    lease = float(own.get("lease", 60.0))
    if not (math.isfinite(lease) and 1 <= lease <= MAX_SECONDS):
        raise bad("lease", f"must be between 1 and {MAX_SECONDS:.0f} seconds")
    run_keys = {**inherited, **{k: v for k, v in t.items() if k in _TABLE_RUN}}
    run = parse_job(path, name, run_keys, section="table")
    return TableSpec(
        name=name,
        table=own.get("table", name),
        key=own["key"],
        status=own["status"],
        ready=own["ready"],
        processing=own["processing"],
        done=own["done"],
        failed=own["failed"],
        run=run,
        order_by=own.get("order_by"),
        batch=batch,
        lease=lease,
    )
