"""Every ``--json`` document has one shape (docs/json.md): an object whose first key is
``schema_version``, and every UTC time written with ``Z``. The installed command, each backend."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from migrate_cron.store import Store
from tests.conftest import run_cli

SAMPLE = Path(__file__).parents[2] / "samples" / "shop.crontab"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$")


def times(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every (key, string) that looks like a timestamp, anywhere in the document."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from times(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from times(v, key)
    elif isinstance(value, str) and TIME.match(value):
        yield key, value


def test_every_json_document_is_a_versioned_object_with_utc_z_times(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store
) -> None:
    shutil.copy(SAMPLE, tmp_path / "shop.crontab")
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(tmp_path / "migrate-cron.toml"),
        "MIGRATE_CRON_SPOOL": str(tmp_path / "spool"),
    }
    gen = ("generate", "registry", "shop.crontab", "--tz", "UTC", "--force")
    assert run_cli(*gen, env=env, cwd=tmp_path).returncode == 0
    job_id = store.enqueue("invoices-export").job_id
    commands = [
        ("analyze", "shop.crontab"),
        ("explain", "30 2 * * *", "--tz", "Europe/Berlin"),
        ("plan", "shop.crontab"),
        ("status",),
        ("status", "--check"),
        ("jobs", "list"),
        ("jobs", "show", str(job_id)),
        ("migrations",),
        ("verify", "invoices-export"),
        ("enqueue", "orders-push-erp"),
        ("scheduler", "--once", "--all"),
        ("simulate", "invoices-export", "--down", "2026-03-01T00:00Z..2026-03-02T00:00Z"),
        ("spool", "list"),
        ("db", "current"),
    ]
    for args in commands:
        done = run_cli(*args, "--json", env=env, cwd=tmp_path)
        assert done.returncode in (0, 1), (args, done.stderr)
        document = json.loads(done.stdout)
        assert isinstance(document, dict), args
        assert next(iter(document)) == "schema_version" and document["schema_version"] == 1, args
        for key, value in times(document):
            if "local" not in key:
                assert value.endswith("Z"), (args, key, value)
