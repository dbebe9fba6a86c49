"""Adding a database is one entry in ``store.dialects.DIALECTS``: a throw-away one — SQLite
under another name, registered for these tests only — runs the Store contract suite
(``test_store_contract.py``, re-collected here with its backend) and gets its claim index. A
database the table does not know is refused by name, never run without a claim index."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite

from migrate_cron.errors import UsageError
from migrate_cron.store import Store, open_store
from migrate_cron.store.dialects import DIALECTS, Dialect, sqlite
from tests.contract.test_store_contract import *  # noqa: F403  (the suite, collected here too)

FLAVOUR = "sqliteflavour"
STRANGER = "sqlitestranger"


class FlavourDialect(SQLiteDialect_pysqlite):
    """SQLAlchemy's SQLite dialect under a name no entry of the table has."""

    name = FLAVOUR
    supports_statement_cache = True


class StrangerDialect(SQLiteDialect_pysqlite):
    name = STRANGER
    supports_statement_cache = True


@pytest.fixture
def flavour(monkeypatch: pytest.MonkeyPatch) -> Iterator[Dialect]:
    """The throw-away entry (SQLite's recipe under another name), in the table for one test."""
    registry.register(FLAVOUR, __name__, "FlavourDialect")
    entry = dataclasses.replace(
        sqlite.DIALECT,
        name=FLAVOUR,
        title="SQLite flavour",
        backends=(FLAVOUR,),
        direct_schemes=(FLAVOUR,),
    )
    monkeypatch.setitem(DIALECTS, entry.name, entry)
    yield entry
    registry.impls.pop(FLAVOUR, None)


@pytest.fixture(params=[FLAVOUR])
def backend(request: pytest.FixtureRequest) -> str:
    """Every test of the suite here runs on the flavour alone."""
    return str(request.param)


@pytest.fixture
def db_url(backend: str, flavour: Dialect, tmp_path: Path) -> str:
    return f"{FLAVOUR}:///{tmp_path / 'queue.db'}"


def test_the_flavour_is_served_by_its_entry(store: Store, flavour: Dialect) -> None:
    assert store.engine.dialect.name == FLAVOUR
    assert store.dialect is flavour


def test_the_flavour_has_its_claim_index(store: Store) -> None:
    names = {ix["name"] for ix in inspect(store.engine).get_indexes(f"{store.prefix}job")}
    assert f"{store.prefix}job_claim_idx" in names


def test_a_database_the_table_does_not_know_is_refused_by_name(tmp_path: Path) -> None:
    registry.register(STRANGER, __name__, "StrangerDialect")
    try:
        with pytest.raises(UsageError, match=STRANGER):
            open_store(f"{STRANGER}:///{tmp_path / 'queue.db'}")
    finally:
        registry.impls.pop(STRANGER, None)
    assert STRANGER not in DIALECTS and not (tmp_path / "queue.db").exists()
