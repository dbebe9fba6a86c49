"""Shared fixtures: real databases, no mocks.

Each pytest session gets its own throwaway database on the PostgreSQL and MariaDB servers
(so parallel runs never see each other's rows) and drops it at the end. Without ``CI=true`` a
server that cannot be reached skips its tests with a message; in CI it fails the run.

Server URLs: ``MIGRATE_CRON_TEST_PG_URL`` and ``MIGRATE_CRON_TEST_MARIADB_URL``
(defaults: the servers of the development machine).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.store import Store, open_store

PG_URL = os.environ.get(
    "MIGRATE_CRON_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
MARIADB_URL = os.environ.get(
    "MIGRATE_CRON_TEST_MARIADB_URL", "mariadb+pymysql://root@127.0.0.1:3306/test"
)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
BACKENDS = ("sqlite", "postgresql", "mariadb")
_prefix_counter = itertools.count()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--chaos-long", action="store_true", default=False, help="run the long chaos variants"
    )


#: Fixtures that give a test a database; such tests are marked ``db`` (``make test-fast``
#: runs the others: parser, analysis, policies, rendering — seconds, no server needed).
DB_FIXTURES = {"store", "db_url", "backend", "pg_database", "mariadb_database"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if DB_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.db)
    if config.getoption("--chaos-long"):
        return
    skip = pytest.mark.skip(reason="long chaos variant: run with --chaos-long")
    for item in items:
        if "chaos_long" in item.keywords:
            item.add_marker(skip)


def _server_database(base_url: str, name: str) -> Iterator[str]:
    """Create a fresh database on a server, yield its URL, drop it afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(base_url)
    dbname = f"mct_{uuid.uuid4().hex[:12]}"
    try:
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {dbname}"))
    except Exception as exc:
        msg = f"{name} at {url.render_as_string(hide_password=True)} is not reachable: {exc}"
        if IN_CI:
            pytest.fail(f"CI requires {msg}", pytrace=False)
        pytest.skip(f"{msg} (start it, see the README, section Try it; required when CI=true)")
    try:
        yield url.set(database=dbname).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {dbname}"))
        admin.dispose()


@pytest.fixture(scope="session", autouse=True)
def _private_spool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Slots a test's ``enqueue`` spools go to a temporary directory, never to the machine's
    /var/spool/migrate-cron (tests that look at the spool set their own)."""
    old = os.environ.get("MIGRATE_CRON_SPOOL")
    os.environ["MIGRATE_CRON_SPOOL"] = str(tmp_path_factory.mktemp("spool"))
    yield
    if old is None:
        os.environ.pop("MIGRATE_CRON_SPOOL", None)
    else:
        os.environ["MIGRATE_CRON_SPOOL"] = old


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    yield from _server_database(PG_URL, "PostgreSQL")


@pytest.fixture(scope="session")
def mariadb_database() -> Iterator[str]:
    yield from _server_database(MARIADB_URL, "MariaDB")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database URL for the current backend (a fresh SQLite file, or the session DB)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'queue.db'}"
    if backend == "postgresql":
        return str(request.getfixturevalue("pg_database"))
    return str(request.getfixturevalue("mariadb_database"))


@pytest.fixture
def table_prefix() -> str:
    """A unique table prefix per test, so tests on one server database never share rows."""
    return f"t{os.getpid() % 100000}_{next(_prefix_counter)}_"


@contextlib.contextmanager
def fresh_store(url: str, prefix: str) -> Iterator[Store]:
    """A Store on ``url`` with freshly created tables under ``prefix``, dropped afterwards."""
    s = open_store(url, prefix=prefix)
    s.create_schema()
    try:
        yield s
    finally:
        s.drop_schema()
        s.dispose()


@pytest.fixture
def store(db_url: str, table_prefix: str) -> Iterator[Store]:
    """A Store with freshly created tables, dropped after the test."""
    with fresh_store(db_url, table_prefix) as s:
        yield s


@pytest.fixture
def pg_store(pg_database: str, table_prefix: str) -> Iterator[Store]:
    """``store`` on PostgreSQL alone, for what only it has (plans, the driver's cursor)."""
    with fresh_store(pg_database, table_prefix) as s:
        yield s


def cli_path() -> str:
    """The installed ``migrate-cron`` console script (the one a user runs)."""
    candidate = Path(sys.executable).with_name("migrate-cron")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("migrate-cron")
    if not found:
        pytest.fail("the migrate-cron command is not installed (run `make install`)")
    return found


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 60,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed command with a bounded time; returns the completed process."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("MIGRATE_CRON_DEBUG", None)
    return subprocess.run(
        [cli_path(), *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
        input=input,
        check=False,
    )


@pytest.fixture
def cli() -> Any:
    return run_cli
