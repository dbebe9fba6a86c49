"""An application's ``orders`` table for the ``worker --table`` tests: rows to process, rows the
workers must never touch, and a fingerprint of everything claiming is not allowed to change.

The claim columns are added by running the revision ``generate migration --claim-table``
writes (online, through Alembic's operations), so every test that uses the table also applies
the real revision on its backend.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    func,
    select,
)

from migrate_cron.registry import TableSpec, parse_registry

PENDING, PROCESSING, DONE, FAILED, SHIPPED = "pending", "processing", "done", "failed", "shipped"


def orders_table(name: str) -> Table:
    return Table(
        name,
        MetaData(),
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("customer", String(100), nullable=False),
        Column("amount", Numeric(10, 2), nullable=False),
        Column("note", Text),
        Column("status", String(20), nullable=False),
        Column("created_at", DateTime, nullable=False),
    )


def create_orders(engine: Engine, name: str, pending: int, untouched: int) -> Table:
    """``pending`` rows to process (ids 1…), then ``untouched`` already shipped ones."""
    table = orders_table(name)
    table.drop(engine, checkfirst=True)
    table.create(engine)
    start = datetime(2024, 1, 1)
    rows = [
        {
            "id": i,
            "customer": f"customer-{i % 97}",
            "amount": Decimal(i % 1000) + Decimal("0.99"),
            "note": None if i % 3 else f"gift wrap ♥ {i}",
            "status": PENDING if i <= pending else SHIPPED,
            # Not in id order: the claim follows order_by, not the key.
            "created_at": start + timedelta(seconds=(i * 7919) % (pending + untouched)),
        }
        for i in range(1, pending + untouched + 1)
    ]
    with engine.begin() as conn:
        for i in range(0, len(rows), 1000):
            conn.execute(table.insert(), rows[i : i + 1000])
    return table


def fingerprint(engine: Engine, table: Table) -> str:
    """A digest of the application's own columns (not status) of every row."""
    own = [table.c.id, table.c.customer, table.c.amount, table.c.note, table.c.created_at]
    digest = hashlib.sha256()
    with engine.connect() as conn:
        for row in conn.execute(select(*own).order_by(table.c.id)):
            digest.update(repr(tuple(row)).encode())
    return digest.hexdigest()


def status_counts(engine: Engine, table: Table) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(select(table.c.status, func.count()).group_by(table.c.status))
        return {str(status): int(n) for status, n in rows}


def registry_text(name: str, table_name: str, command: str, **extra: Any) -> str:
    lines = [
        f"[tables.{name}]",
        f'table = "{table_name}"',
        'key = "id"',
        'status = "status"',
        f'ready = "{PENDING}"',
        f'processing = "{PROCESSING}"',
        f'done = "{DONE}"',
        f'failed = "{FAILED}"',
        'order_by = "created_at"',
        f"command = '''{command}'''",
    ]
    lines += [f"{key} = {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def table_spec(body: str) -> TableSpec:
    import tomllib

    registry = parse_registry(tomllib.loads(body))
    return next(iter(registry.tables.values()))


def apply_claim_revision(url: str, spec: TableSpec, tmp: Path, direction: str = "upgrade") -> str:
    """Write the claim revision into a scratch script directory and run its ``upgrade()`` (or
    ``downgrade()``) against ``url``; returns the revision's source."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine

    from migrate_cron.generate.claim_table import write_claim_revision
    from migrate_cron.generate.revision import ENV_DIR
    from migrate_cron.store.dialects import normalize_url

    root = tmp / f"claim-revision-{direction}"
    (root / "versions").mkdir(parents=True)
    (root / "script.py.mako").write_bytes((ENV_DIR / "script.py.mako").read_bytes())
    source = write_claim_revision(ScriptDirectory(str(root)), spec).path.read_text()
    namespace: dict[str, Any] = {"__name__": "claim_revision"}
    exec(compile(source, "<claim revision>", "exec"), namespace)
    engine = create_engine(normalize_url(url))
    try:
        with engine.begin() as conn:
            context = MigrationContext.configure(conn)
            with Operations.context(context):
                namespace[direction]()
    finally:
        engine.dispose()
    return source
