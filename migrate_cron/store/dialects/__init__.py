"""The databases migrate-cron knows: ``DIALECTS``, one entry each, and everything derived.

``open_store`` (which Store), the engine recipe, the schema's column types and claim index,
the direct writer (``direct.py``), ``config.normalize_url``'s driver defaults, ``generate
migration``'s ``--dialect`` choices and the list it renders for all come from this table.
Adding a database: a module like ``sqlite.py`` (its ``DIALECT`` entry, ``STATEMENTS``,
``make_engine``, ``column_types``, ``connector``), its Store subclass, and one line below.

A name the table does not know fails loudly (``dialect_for``): never a database without a
claim index. Standard library only (the cron line's ``enqueue`` reads it): what needs
SQLAlchemy is imported from an entry's ``module`` on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from migrate_cron.store.dialects import mssql, mysql, postgresql, sqlite
from migrate_cron.store.dialects.entry import ClaimIndex, Dialect, Stamp, Statements

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DIALECTS",
    "ClaimIndex",
    "Dialect",
    "Stamp",
    "Statements",
    "dialect_for",
    "driver_defaults",
    "known",
    "normalize_url",
]

#: Every database, by family name. The queue runs on those with a Store; the others are
#: rendered for (``generate migration --sql``).
DIALECTS: dict[str, Dialect] = {
    d.name: d for d in (postgresql.DIALECT, mysql.DIALECT, sqlite.DIALECT, mssql.DIALECT)
}

#: Where the queue is when nobody says: a file in the current directory, so a new user can try
#: everything without a server.
DEFAULT_DATABASE_URL = sqlite.DEFAULT_URL


def known() -> Iterator[Dialect]:
    """The entries, in table order."""
    return iter(DIALECTS.values())


def dialect_for(backend: str) -> Dialect:
    """The entry serving SQLAlchemy's ``backend`` name (``mariadb`` → the MySQL family);
    ``UsageError`` naming it when the table has none."""
    for dialect in DIALECTS.values():
        if backend in dialect.backends:
            return dialect
    from migrate_cron.errors import UsageError

    *first, last = [d.title for d in DIALECTS.values() if d.runs_queue]
    raise UsageError(f"unsupported database {backend!r}: use {', '.join(first)} or {last}")


@functools.cache
def aware_stamps(backend: str) -> bool:
    """Whether ``backend`` stores timezone-aware timestamps: ``UTCDateTime`` asks for every
    value it binds (the attempt history binds three per run)."""
    return dialect_for(backend).stamp is Stamp.AWARE


def backend_names() -> list[str]:
    """Every SQLAlchemy name the table serves, in table order (``--dialect`` choices)."""
    return [backend for d in DIALECTS.values() for backend in d.backends]


def host_lists() -> set[str]:
    """SQLAlchemy names of the databases whose URL may carry libpq's host list
    (``config.normalize_url`` rewrites it into SQLAlchemy's form)."""
    return {backend for d in DIALECTS.values() if d.host_list for backend in d.backends}


def driver_loggers() -> tuple[str, ...]:
    """The drivers' loggers, whose warnings a worker or scheduler writes into its own log
    (psycopg warns when the server goes away inside a pipeline)."""
    return tuple(d.driver_logger for d in DIALECTS.values() if d.driver_logger)


def normalize_url(url: str) -> str:
    """Pick the drivers we install when the URL names none, write a host list the way
    SQLAlchemy reads it (databases with ``host_list``), and percent-encode a raw ``@`` in
    the password (``config.encode_password_at``)."""
    from migrate_cron.config import encode_password_at
    from migrate_cron.store.dialects.urls import sqlalchemy_hosts

    scheme, sep, rest = encode_password_at(url).partition("://")
    if not sep:
        return url
    scheme = driver_defaults().get(scheme, scheme)  # driverless: a driver we do not ship
    if scheme.partition("+")[0] in host_lists():
        rest = sqlalchemy_hosts(rest)
    return f"{scheme}://{rest}"


def driver_defaults() -> dict[str, str]:
    """URL scheme as typed -> the scheme with the driver we install (a driverless URL would
    select one we do not ship: psycopg2, mysqlclient)."""
    return {typed: full for d in DIALECTS.values() for typed, full in d.drivers.items()}
