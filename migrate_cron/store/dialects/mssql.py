"""SQL Server: not a queue backend. ``generate migration --sql --dialect mssql`` renders our
DDL for it (microsecond DATETIME2 timestamps, the state-first claim index); nothing here
connects."""

from __future__ import annotations

from typing import Any

from migrate_cron.store.dialects.entry import ClaimIndex, Dialect

DIALECT = Dialect(
    name="mssql",
    title="SQL Server",
    backends=("mssql",),
    module=__name__,
    claim_index=ClaimIndex.STATE_FIRST,
)


def column_types(dialect: Dialect) -> dict[str, dict[str, Any]]:
    from sqlalchemy.dialects import mssql

    stamp = mssql.DATETIME2(precision=6)  # type: ignore[no-untyped-call]
    return {backend: {"timestamp": stamp} for backend in dialect.backends}
