"""What a connection goes through on its way back to the pool (``store/reset.py``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from migrate_cron.store import open_store
from migrate_cron.store.dialects.mysql import between_transactions


def _rollbacks(conn: Any) -> int:
    """ROLLBACK statements this server session has run so far."""
    row = conn.exec_driver_sql("SHOW SESSION STATUS LIKE 'Com_rollback'").one()
    return int(row[1])


def test_no_rollback_after_a_commit_on_mariadb(mariadb_database: str, table_prefix: str) -> None:
    """PyMySQL sends the pool's ROLLBACK even after a COMMIT: one more round trip per
    transaction. The server's own status flags say when it would change nothing."""
    store = open_store(mariadb_database, prefix=table_prefix)
    try:
        sessions = set()
        with store.engine.connect() as conn:
            before = _rollbacks(conn)
            conn.commit()
        for _ in range(3):
            with store.engine.begin() as conn:
                sessions.add(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())
        with store.engine.connect() as conn:
            sessions.add(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())
            assert len(sessions) == 1  # the pool handed out the same session each time
            assert _rollbacks(conn) == before
    finally:
        store.dispose()


def test_a_transaction_left_open_is_still_rolled_back(
    mariadb_database: str, table_prefix: str
) -> None:
    """A connection whose last answer says a transaction is open (used past SQLAlchemy, as a
    raw connection) is rolled back on its return: its row lock does not outlive it."""
    store = open_store(mariadb_database, prefix=table_prefix)
    table = f"{table_prefix}reset_probe"
    try:
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE TABLE {table} (id INT PRIMARY KEY) ENGINE=InnoDB")
            conn.exec_driver_sql(f"INSERT INTO {table} VALUES (1)")
        raw = store.engine.raw_connection()
        cursor = raw.cursor()
        cursor.execute(f"UPDATE {table} SET id = 2 WHERE id = 1")
        cursor.close()
        assert not between_transactions(raw.driver_connection)
        raw.close()  # back to the pool: rolled back
        with store.engine.begin() as conn:
            assert conn.execute(text(f"SELECT id FROM {table}")).scalar_one() == 1
    finally:
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
        store.dispose()


def test_other_drivers_connections_are_rolled_back() -> None:
    """A connection without PyMySQL's status flags is never taken as idle."""

    class Other:
        pass

    assert not between_transactions(Other())
    assert not between_transactions(None)
