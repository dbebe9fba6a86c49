"""What a real database holds after a migration, for the tests that apply our revision."""

from __future__ import annotations

from typing import Any

from sqlalchemy import MetaData, create_engine, inspect

from migrate_cron.store.dialects import normalize_url
from migrate_cron.store.schema import build_tables


def tables_with_prefix(url: str, prefix: str) -> set[str]:
    """Table names starting with ``prefix`` (tests share a server database per session)."""
    engine = create_engine(normalize_url(url))
    try:
        return {name for name in inspect(engine).get_table_names() if name.startswith(prefix)}
    finally:
        engine.dispose()


def metadata_for(dialect: str, prefix: str) -> MetaData:
    """``build_tables(prefix).metadata`` as ``create_all`` applies it on ``dialect``: indexes
    whose ``ddl_if`` names other dialects are left out (autogenerate ignores ``ddl_if``)."""
    tables = build_tables(prefix)
    for table in tables.metadata.tables.values():
        for index in list(table.indexes):
            ddl_if = getattr(index, "_ddl_if", None)
            if ddl_if is not None and dialect not in ddl_if.dialect:
                table.indexes.discard(index)
    return tables.metadata


def schema_diff(url: str, prefix: str) -> list[Any]:
    """Alembic's autogenerate comparison of the live tables against ``schema.py``."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    names = set(build_tables(prefix).names)
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={
                    "include_name": lambda name, type_, _parent: type_ != "table" or name in names,
                    "compare_type": True,
                    "compare_server_default": True,
                },
            )
            return list(compare_metadata(context, metadata_for(engine.dialect.name, prefix)))
    finally:
        engine.dispose()
