"""A database of its own for a test that needs the default table names (``alembic init``'s
``alembic_version``, our unprefixed tables) or a database that does not exist yet (the
database is "away" when cron fires), on the PostgreSQL or MariaDB test server. The URL is
written as a user types it (``postgresql://``, ``mariadb://``), without a driver."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

from tests.conftest import MARIADB_URL, PG_URL


@contextlib.contextmanager
def later_database(server: str) -> Iterator[tuple[str, Callable[[], None]]]:
    """The URL of a database that does not exist until ``create()``; dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(PG_URL if server == "postgresql" else MARIADB_URL)
    name = f"mct_{uuid.uuid4().hex[:12]}"
    typed = base.set(drivername=server, database=name).render_as_string(hide_password=False)
    admin = create_engine(base, isolation_level="AUTOCOMMIT")

    def create() -> None:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))

    try:
        yield typed, create
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()


@contextlib.contextmanager
def fresh_database(server: str) -> Iterator[str]:
    """The URL of a new, empty database; dropped afterwards."""
    with later_database(server) as (url, create):
        create()
        yield url
