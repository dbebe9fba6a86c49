"""The Alembic revision that lets workers claim rows of a business table (``--claim-table``).

It adds what claiming needs and nothing else: the four columns of ``store.rows.CLAIM_COLUMNS``
(nullable, or ``attempts`` with a server default of 0, so existing rows keep every value they
had) and two indexes — claim and reap, partial on PostgreSQL, composite elsewhere (the
definitions live in ``store/rows.py``, next to the statements that use them). The downgrade
drops exactly those, indexes first (SQLite refuses to drop an indexed column). Existing
columns are never altered, so the revision is safe to run on a live table: on PostgreSQL 11+,
MariaDB 10.3+ and SQLite, adding a column with a constant default does not rewrite the table.

Like the migrate-cron tables' revisions, the file imports only alembic and SQLAlchemy, and is
appended to the user's single head. Its id is derived from the table name, so a second
``--claim-table`` for the same table is refused instead of adding the columns twice.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.generate.alembic_code import body, dialect_imports, index_dialects, render_ops
from migrate_cron.generate.revision import (
    DIALECTS,
    ENV_DIR,
    Revision,
    WrittenRevision,
    write_revision,
)

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

    from migrate_cron.registry import TableSpec


def claim_revision_id(spec: TableSpec) -> str:
    """Stable per table: the same table gets the same id in every checkout."""
    return hashlib.sha1(f"migrate-cron:claim-table:{spec.table}".encode()).hexdigest()[:12]


def render_claim_revision(spec: TableSpec) -> Revision:
    """The upgrade (add columns, then indexes per dialect) and the downgrade (the reverse)."""
    from alembic.operations import ops

    from migrate_cron.store.rows import CLAIM_COLUMNS, claim_columns, claim_table_schema

    table = claim_table_schema(spec)
    up = [
        f"# Claim columns for worker --table {spec.name} (migrate-cron); existing columns are "
        "not touched."
    ]
    for new in claim_columns():  # fresh columns: the ones in ``table`` belong to it
        up += render_ops([ops.AddColumnOp(spec.table, new)])
    up.append("# Claim and reap indexes: partial on PostgreSQL, composite elsewhere.")
    up.append("dialect = op.get_context().dialect.name")
    names: list[str] = []
    for index in sorted(table.indexes, key=lambda i: (i.name or "", index_dialects(i) or ())):
        dialects = index_dialects(index)
        up.append(f"if dialect in {dialects!r}:")
        up += ["    " + line for line in render_ops([ops.CreateIndexOp.from_index(index)])]
        if index.name not in names:
            names.append(str(index.name))
    down: list[str] = []
    for name in names:
        down += render_ops([ops.DropIndexOp(name, table_name=spec.table)])
    for name in reversed(CLAIM_COLUMNS):
        down += render_ops([ops.DropColumnOp(spec.table, name)])
    return Revision(
        prefix="",
        rev_id=claim_revision_id(spec),
        message=f"add migrate-cron claim columns to {spec.table}",
        previous=None,
        upgrades=body(up),
        downgrades=body(down),
        imports=dialect_imports(),
        table_names=(spec.table,),
    )


def write_claim_revision(
    script: ScriptDirectory,
    spec: TableSpec,
    head: str | None = None,
    branch_label: str | None = None,
) -> WrittenRevision:
    """Append the claim revision for ``spec`` to the user's history (see ``write_revision``)."""
    return write_revision(script, render_claim_revision(spec), head, branch_label)


def claim_offline_sql(spec: TableSpec, dialect: str) -> str:
    """The DDL of the claim revision's ``upgrade()`` for one dialect, without a database: the
    very file ``generate migration --claim-table`` writes, run in Alembic's offline mode."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from migrate_cron.errors import UsageError

    if dialect not in DIALECTS:
        raise UsageError(f"unknown dialect {dialect!r}: use one of {', '.join(DIALECTS)}")
    with tempfile.TemporaryDirectory(prefix="migrate-cron-rev-") as tmp:
        root = Path(tmp)
        (root / "versions").mkdir()
        (root / "script.py.mako").write_bytes((ENV_DIR / "script.py.mako").read_bytes())
        written = write_claim_revision(ScriptDirectory(str(root)), spec)
        source = written.path.read_text(encoding="utf-8")
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name=dialect,
        opts={"as_sql": True, "output_buffer": buffer, "literal_binds": True},
    )
    namespace: dict[str, Any] = {"__name__": "migrate_cron_claim_revision"}
    exec(compile(source, f"<claim revision {spec.table}>", "exec"), namespace)
    with Operations.context(context):
        namespace["upgrade"]()
    header = (
        f"-- migrate-cron claim columns for table {spec.table!r} ([tables.{spec.name}]), "
        f"revision {claim_revision_id(spec)}, dialect {dialect} (offline DDL)\n"
    )
    return header + buffer.getvalue()
