"""Alembic environment for the migrate-cron tables.

Used three ways: by ``migrate-cron db upgrade/downgrade`` (which hands over an open connection
and its own version table), by ``alembic -c alembic/alembic.ini ...`` in the migrate-cron
repository, and as the env.py of a project created by
``migrate-cron generate migration --init DIR``. It imports only alembic and SQLAlchemy, so the
history keeps working where migrate-cron is not installed.

Database URL, the first one set: ``alembic -x database_url=...``, ``sqlalchemy.url`` in the
ini file, the ``MIGRATE_CRON_DATABASE_URL`` environment variable, the ini's
``migrate_cron_default_url``. A driverless URL gets the driver the ini's
``migrate_cron_drivers`` names for its scheme: both lines are written from migrate-cron's
dialect table (``store/dialects``) when ``--init`` makes the ini, so this file spells no
database.
"""

from __future__ import annotations

import os
from logging.config import fileConfig
from typing import Any

from alembic import context
from sqlalchemy import Connection, create_engine, pool

config = context.config
if config.config_file_name is not None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)

# Set this to your models' MetaData to use autogenerate; include_object below keeps it from
# proposing to drop the migrate-cron tables, which have their own revision.
target_metadata = None

# Driverless URLs would select drivers migrate-cron does not install (psycopg2, mysqlclient):
# ``scheme=scheme+driver`` pairs, separated by spaces.
_DRIVERS = dict(
    pair.split("=", 1)
    for pair in (config.get_main_option("migrate_cron_drivers") or "").split()
    if "=" in pair
)
_PREFIX = config.get_main_option("migrate_cron_table_prefix") or ""
MIGRATE_CRON_TABLES = frozenset(
    f"{_PREFIX}{name}"
    for name in (
        "job",
        "scheduled_runs",
        "job_leases",
        "side_effects",
        "job_attempts",
        "migrate_cron_alembic_version",
    )
)


def include_object(
    object: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """Autogenerate leaves the migrate-cron tables alone."""
    return not (type_ == "table" and name in MIGRATE_CRON_TABLES)


def database_url() -> str:
    url = (
        context.get_x_argument(as_dictionary=True).get("database_url")
        or config.get_main_option("sqlalchemy.url")
        or os.environ.get("MIGRATE_CRON_DATABASE_URL")
        or config.get_main_option("migrate_cron_default_url")
    )
    if not url:
        raise SystemExit(
            "no database URL: give -x database_url=..., sqlalchemy.url in the ini, or "
            "MIGRATE_CRON_DATABASE_URL"
        )
    scheme, sep, rest = url.partition("://")
    return f"{_DRIVERS.get(scheme, scheme)}{sep}{rest}"


def version_table() -> str:
    return config.get_main_option("version_table") or "alembic_version"


def run_migrations_offline() -> None:
    """Write the SQL to stdout (``alembic upgrade head --sql``)."""
    context.configure(
        url=database_url(),
        target_metadata=target_metadata,
        include_object=include_object,
        version_table=version_table(),
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_object=include_object,
        version_table=version_table(),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Use the caller's connection when there is one (``migrate-cron db``), else connect."""
    connection = config.attributes.get("connection")
    if connection is not None:
        run_with(connection)
        return
    engine = create_engine(database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        run_with(connection)


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
