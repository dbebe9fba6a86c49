"""The keys of a ``[jobs.NAME]`` table: which exist, the type of each, and one right spelling
of each to show when a value has the wrong form (a test keeps these in step with
docs/registry.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from migrate_cron.registry.spec import EntryError

#: Every key a ``[jobs.NAME]`` table (or ``[defaults]``) may hold, and the type its value has.
JOB_KEYS = {
    "command": str,
    "handler": str,
    "schedule": str,
    "timezone": str,
    "shell": str,
    "user": str,
    "env": dict,
    "cwd": str,
    "cwd_fallback": str,
    "stdin": str,
    "timeout": (int, float),
    "max_attempts": int,
    "backoff": dict,
    "policy": str,
    "max_backfill": int,
    "misfire_grace": (int, float),
    "mode": str,
    "concurrency": int,
    "overlap": str,
    "notify": list,
    "notify_on": list,
    "on_success": list,
    "on_failure": list,
    "source": dict,
    "sources": list,
    "migration": dict,
    "migrations": list,
}


def check_keys(path: str, where: str, table: Mapping[str, Any]) -> None:
    for key, value in table.items():
        if key not in JOB_KEYS:
            raise EntryError(path, where, None, f"unknown key {key!r}")
        expected = JOB_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, expected):  # type: ignore[arg-type]
            want = TYPE_NAMES.get(expected, "a number")  # type: ignore[call-overload]
            raise EntryError(
                path, where, key, f"must be {want}, not {shown(value)}{key_example(key)}"
            )


TYPE_NAMES = {str: "a string", int: "an integer", dict: "a table", list: "an array"}

#: One right spelling of each ``[jobs.NAME]`` key, shown when a value has the wrong form (the
#: reference is docs/registry.md; a test keeps the two in step).
KEY_EXAMPLES: dict[str, str] = {
    "command": 'command = "cd /srv/shop && php artisan invoices:export"',
    "handler": 'handler = "shop.tasks:export_invoices"',
    "schedule": 'schedule = "30 2 * * *"',
    "timezone": 'timezone = "Europe/Berlin"',
    "shell": 'shell = "/bin/bash"',
    "user": 'user = "www-data"',
    "env": 'env = { PATH = "/usr/local/bin:/usr/bin:/bin", APP_ENV = "prod" }',
    "cwd": 'cwd = "/srv/shop"',
    "cwd_fallback": 'cwd_fallback = "/var/spool/cron"',
    "stdin": 'stdin = "line one\\nline two\\n"',
    "timeout": "timeout = 3600",
    "max_attempts": "max_attempts = 5",
    "backoff": "backoff = { base = 30, cap = 3600 }",
    "policy": 'policy = "run-once"',
    "max_backfill": "max_backfill = 10",
    "misfire_grace": "misfire_grace = 60",
    "mode": 'mode = "enqueue"',
    "concurrency": "concurrency = 1",
    "overlap": 'overlap = "skip"',
    "notify": 'notify = ["mail:ops@example.com"]',
    "notify_on": 'notify_on = ["failed"]',
    "on_success": 'on_success = ["invoices-upload"]',
    "on_failure": 'on_failure = ["page-ops"]',
    "source": "[jobs.NAME.source] (written by `generate registry`)",
    "sources": "[[jobs.NAME.sources]] (written by `generate registry`)",
    "migration": "[jobs.NAME.migration] (written by `migrate`)",
    "migrations": "[[jobs.NAME.migrations]] (written by `migrate`)",
}


def key_example(key: str | None) -> str:
    """`` (e.g. backoff = { base = 30, cap = 3600 })`` for a key with a known form."""
    example = KEY_EXAMPLES.get(key or "")
    return f" (e.g. {example})" if example else ""


def shown(value: Any) -> str:
    """A value in an error line: its repr, cut (a 1 MB string is not a message)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
