"""Our tables as the Python code of an Alembic revision, through Alembic's own renderer.

The rendered code imports alembic and SQLAlchemy, never migrate_cron: TypeDecorators are
written as their plain SQL type, the column type variants of each database come from
SQLAlchemy's dialect modules (``dialect_imports``), and an index that exists only on some
databases (``Index.ddl_if``: the claim index) becomes an ``if`` block on
``op.get_context().dialect.name``, which also works offline (``--sql``).
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from migrate_cron.store.dialects import driver_defaults, known

if TYPE_CHECKING:
    from alembic.operations import ops
    from sqlalchemy import Index, Table

INDENT = "    "
#: The databases step 4 converts on: those stating a collation (each its own names).
CONVERTED_DIALECTS = tuple(
    backend for d in known() for backend in d.backends if backend in d.collations
)


def _type_modules() -> list[str]:
    """SQLAlchemy's dialect modules the rendered column types come from (``<db>.VARCHAR`` …)."""
    from migrate_cron.store.schema import column_variants

    found = set()
    for types in column_variants().values():
        for part, made in types.items():
            if part == "table_options":
                continue
            typed = made(1) if part == "string" else made() if part == "text" else made
            module = type(typed).__module__.split(".")
            if module[:2] == ["sqlalchemy", "dialects"]:
                found.add(module[2])
    return sorted(found)


def required_imports() -> dict[str, str]:
    """Module-level names the rendered code needs, and the import that binds each."""
    return {
        "op": "from alembic import op",
        "sa": "import sqlalchemy as sa",
        **{name: f"from sqlalchemy.dialects import {name}" for name in _type_modules()},
    }


def dialect_imports() -> str:
    """The import line of the dialect modules the rendered types come from."""
    return f"from sqlalchemy.dialects import {', '.join(_type_modules())}"


def render_conversions(old: list[Table], new: list[Table]) -> list[str]:
    """``ALTER TABLE … MODIFY`` for each text column whose MySQL/MariaDB definition differs
    between the released tables (``old``) and ``schema.py`` today (``new``), one statement per
    table (one rebuild of it), with the table's default character set. No-op on other
    databases.

    MODIFY restates the whole column (type, character set, collation, NULL, default), compiled
    by SQLAlchemy from ``schema.py``; converting latin1 text to utf8mb4 keeps every character.
    The downgrade leaves the columns as they are: utf8mb4 holds everything latin1 did, and
    converting back could fail on (or mangle) the text stored since."""
    released = {t.name: t for t in old}
    if not new:
        return []
    lines = [
        "# Text columns state utf8mb4 and a binary collation on MySQL/MariaDB: a table created",
        "# on a latin1 server could not hold a job's output in CJK or with a check mark (error",
        "# 1366). Other databases store Unicode already: nothing to do there.",
        "dialect = op.get_context().dialect.name",
    ]
    for name in CONVERTED_DIALECTS:
        lines.append(f"if dialect == {name!r}:")
        for table in new:
            clauses = _alter_clauses(released[table.name], table, name)
            if clauses:  # one string literal per clause, so a review reads one per line
                lines.append(f"{INDENT}op.execute(")
                lines += [f"{INDENT * 2}{clause!r}" for clause in clauses]
                lines.append(f"{INDENT})")
    return lines


def _alter_clauses(old: Table, new: Table, dialect_name: str) -> list[str]:
    """The pieces of one ``ALTER TABLE`` for ``dialect_name`` turning ``old``'s text columns
    into ``new``'s (concatenated, they are the statement); empty when none differs."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.schema import CreateColumn

    dialect = make_url(f"{driver_defaults()[dialect_name]}://").get_dialect()()
    changes = []
    for column in new.c:
        before = str(CreateColumn(old.c[column.name]).compile(dialect=dialect))
        after = str(CreateColumn(column).compile(dialect=dialect))
        if before != after:
            changes.append(f" MODIFY {after},")
    if not changes:
        return []
    options = new.dialect_options[dialect_name]
    changes.append(f" DEFAULT CHARACTER SET {options['charset']} COLLATE {options['collate']}")
    return [f"ALTER TABLE {dialect.identifier_preparer.format_table(new)}", *changes]


def render_indexes(table: Table) -> list[str]:
    """Plain indexes as they are; dialect-conditional ones (``Index.ddl_if``) as ``if`` blocks."""
    from alembic.operations import ops

    lines: list[str] = []
    conditional: list[tuple[tuple[str, ...], Index]] = []
    for index in sorted(table.indexes, key=index_key):
        dialects = index_dialects(index)
        if dialects is None:
            lines += render_ops([ops.CreateIndexOp.from_index(index)])
        else:
            conditional.append((dialects, index))
    if conditional:
        lines.append("# Claim index: partial where the dialect has them, else (state, run_at, id).")
        lines.append("dialect = op.get_context().dialect.name")
        for dialects, index in conditional:
            lines.append(f"if dialect in {dialects!r}:")
            lines += [INDENT + line for line in render_ops([ops.CreateIndexOp.from_index(index)])]
    return lines


def index_key(index: Index) -> tuple[str, tuple[str, ...]]:
    return (index.name or "", index_dialects(index) or ())


def index_dialects(index: Index) -> tuple[str, ...] | None:
    """The dialects of an ``Index.ddl_if(dialect=...)``; None for an unconditional index."""
    ddl_if = getattr(index, "_ddl_if", None)
    if ddl_if is None:
        return None
    if ddl_if.callable_ is not None or not ddl_if.dialect:
        raise ValueError(f"index {index.name}: only ddl_if(dialect=...) can be rendered")
    dialect = ddl_if.dialect
    return (dialect,) if isinstance(dialect, str) else tuple(dialect)


def render_ops(op_list: list[ops.MigrateOperation]) -> list[str]:
    """Alembic's rendering of some operations, as unindented lines without its banner."""
    from alembic.autogenerate import render_python_code
    from alembic.operations import ops
    from alembic.runtime.migration import MigrationContext

    # The context of the database with its own payload type (JSONB) makes Alembic render
    # JSONB(astext_type=sa.Text()) qualified; the generic one writes a bare ``Text()`` that
    # would fail at import.
    context = MigrationContext.configure(dialect_name=_payload_backend())
    code = render_python_code(ops.UpgradeOps(ops=op_list), migration_context=context)
    lines = textwrap.dedent(INDENT + code).splitlines()
    return [line for line in lines if line.strip() and not line.startswith("# ###")]


def _payload_backend() -> str:
    from migrate_cron.store.schema import column_variants

    return next(b for b, types in column_variants().items() if "payload" in types)


def body(lines: list[str]) -> str:
    """Join lines for ``${upgrades}``: the template indents the first line, we the rest."""
    return ("\n" + INDENT).join(lines)
