"""What claiming needs of a business table the registry describes (``[tables.NAME]``): the
four columns it adds (``CLAIM_COLUMNS``), the claim and reap indexes per database, and the
claim request a dialect's ``_claim_rows`` runs (``RowClaim``). The operations on such a table
are ``row_queue.py``'s; ``generate migration --claim-table`` renders these definitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Index,
    Integer,
    MetaData,
    Table,
    literal,
    text,
)
from sqlalchemy.sql.expression import TableClause

from migrate_cron.store.dialects import ClaimIndex
from migrate_cron.store.schema import (
    TIMESTAMP_TYPE,
    claim_backends,
    exact_string,
    exact_text,
)

if TYPE_CHECKING:
    from migrate_cron.registry import TableSpec

#: The columns claiming adds to a business table, nothing else.
CLAIM_COLUMNS = ("locked_by", "locked_until", "attempts", "last_error")


def claim_columns() -> list[Column[Any]]:
    """The added columns as the revision creates them: nullable, or with a server default, so
    adding them to a table full of rows rewrites none of its values. Text columns state
    ``utf8mb4`` on MySQL/MariaDB (``schema.exact_string``), whatever the table's own charset."""
    return [
        Column("locked_by", exact_string(200), nullable=True),
        Column("locked_until", TIMESTAMP_TYPE, nullable=True),
        Column("attempts", Integer(), nullable=False, server_default=text("0")),
        Column("last_error", exact_text(), nullable=True),
    ]


def index_names(spec: TableSpec) -> tuple[str, str]:
    """(claim index, reap index), named after the table (63 bytes at most, PostgreSQL's cut)."""
    return (f"{spec.table}_claim_idx"[-63:], f"{spec.table}_lease_idx"[-63:])


def claim_table_schema(spec: TableSpec) -> Table:
    """The business table as far as claiming knows it: key, status, order column and the added
    columns, with the indexes the claim and the reaper use.

    - Claim: partial ``(order, key) WHERE status = ready`` where the database's
      ``row_claim_index`` is partial (only the ready rows, however many done rows pile up);
      ``(status, order, key)`` elsewhere (on MariaDB an index without the status first gave
      false "nothing ready" answers under SKIP LOCKED contention, see docs/architecture.md).
    - Reap: partial ``(locked_until) WHERE status = processing``, else
      ``(status, locked_until)``, alike.

    Types of the application's own columns are not known without a database; they are not
    rendered (the revision never creates nor alters them)."""
    from sqlalchemy.types import NullType

    own = [spec.key, spec.status, *([spec.order_by] if spec.order_by else [])]
    columns = [Column(name, NullType()) for name in dict.fromkeys(own)]
    t = Table(spec.table, MetaData(), *columns, *claim_columns())
    claim_name, lease_name = index_names(spec)
    order = [t.c[spec.order_by]] if spec.order_by and spec.order_by != spec.key else []
    # Expressions, not text: DDL renders the values as literals (quoted by the dialect).
    ready = t.c[spec.status] == literal(spec.ready)
    processing = t.c[spec.status] == literal(spec.processing)
    # The claim index's shape per database (``dialects.ClaimIndex``): the partial one where
    # the claim reads only ready rows; the status first everywhere else.
    partial = claim_backends(ClaimIndex.PARTIAL, rows=True)
    full = claim_backends(ClaimIndex.STATE_FIRST, rows=True)
    where = {f"{backend}_where": ready for backend in partial}
    Index(claim_name, *order, t.c[spec.key], **where).ddl_if(dialect=partial)  # type: ignore[arg-type]
    Index(claim_name, t.c[spec.status], *order, t.c[spec.key]).ddl_if(
        dialect=full  # type: ignore[arg-type]  # tuples are documented
    )
    reap = {f"{backend}_where": processing for backend in partial}
    Index(lease_name, t.c.locked_until, **reap).ddl_if(dialect=partial)  # type: ignore[arg-type]
    Index(lease_name, t.c[spec.status], t.c.locked_until).ddl_if(
        dialect=full  # type: ignore[arg-type]  # tuples are documented
    )
    return t


@dataclass(frozen=True)
class RowClaim:
    """What a dialect's ``_claim_rows`` needs: the table, which rows are ready, in which
    order, and what the claim writes. Built by ``RowQueue``; no SQL text of its own."""

    table: TableClause
    key: ColumnElement[Any]
    attempts: ColumnElement[Any]
    ready: tuple[ColumnElement[bool], ...]
    order: tuple[ColumnElement[Any], ...]
    values: Mapping[str, Any]
