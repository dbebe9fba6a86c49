"""A PostgreSQL URL naming a primary and its replicas (libpq's host list with
``target_session_attrs=read-write``) works in every part that connects: the Store, ``db
upgrade`` (Alembic), ``migrate`` writing the crontab line, the cron line's driver-only writer
(``store/direct.py``), the worker's LISTEN connection — and a session on a server that takes no
writes is treated as a lost connection.

The host list here is a closed port first, then the shared server: each part has to go past the
first host as libpq does. The failover itself is ``tests/faults/test_failover.py``.
"""

from __future__ import annotations

import shlex
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from migrate_cron.config import mask_url
from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.store import Store, open_store
from migrate_cron.store.dialects import normalize_url
from migrate_cron.store.direct import open_writer
from tests.cli.test_enqueue_direct import run_traced
from tests.conftest import run_cli
from tests.e2e.journey import cron_command, fire_like_cron

SLOT = datetime(2026, 3, 1, 2, 30, tzinfo=UTC)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _host_list(pg_database: str) -> str:
    """``pg_database`` behind a host that refuses connections, in libpq's URI spelling."""
    real = make_url(pg_database)
    return (
        f"postgresql://{real.username}@127.0.0.1:{_closed_port()},"
        f"{real.host}:{real.port or 5432}/{real.database}?target_session_attrs=read-write"
    )


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u@/db?host=h1:5432&host=h2:5433&target_session_attrs=read-write",
        "postgresql://u@/db?host=h1:5432,h2:5433&target_session_attrs=read-write",
        "postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
        "postgresql://u@/db?host=h1,h2&port=5432,5433&target_session_attrs=read-write",
    ],
)
def test_each_spelling_of_a_host_list_reaches_libpq_with_each_hosts_port(url: str) -> None:
    parsed = make_url(normalize_url(url))
    _, args = parsed.get_dialect()().create_connect_args(parsed)
    assert (args["host"], args["port"]) == ("h1,h2", "5432,5433")
    assert (args["dbname"], args["target_session_attrs"]) == ("db", "read-write")


def test_a_password_in_a_host_list_url_is_masked() -> None:
    for url in (
        "postgresql://u:S3cret@h1:5432,h2:5433/db",
        "postgresql+psycopg://u:S3cret@/db?host=h1:5432&host=h2:5433",
    ):
        assert "S3cret" not in mask_url(url)
        assert "S3cret" not in mask_url(normalize_url(url))


def test_every_part_takes_a_primary_and_replica_url(
    pg_database: str, table_prefix: str, tmp_path: Path
) -> None:
    url = _host_list(pg_database)
    env = {"HOME": str(tmp_path), "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    env["MIGRATE_CRON_REGISTRY"] = str(tmp_path / "migrate-cron.toml")
    crontab = tmp_path / "crontab"
    crontab.write_text("30 2 * * * /opt/bin/export-invoices\n")
    try:
        for args in (
            ("generate", "registry", str(crontab)),
            ("db", "upgrade", "--database-url", url),
            ("migrate", "export-invoices", "--to", "enqueue", "--database-url", url),
        ):
            done = run_cli(*args, env=env, cwd=tmp_path, timeout=120)
            assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
        # The line migrate wrote, as cron runs it, and again through the driver alone.
        command = cron_command(crontab, "export-invoices")
        assert fire_like_cron(command, 1, env) == [0]
        store = open_store(url, prefix=table_prefix)
        try:
            (job,) = store.list_jobs(kind="export-invoices")
            assert job.state == "open"
            line = command.split(" ", 1)[1].replace("\\%", "%")
            code, out, err, packages = run_traced(
                *shlex.split(line), "--slot", SLOT.isoformat(), spool=tmp_path / "spool"
            )
            assert (code, out, err) == (0, "", "")
            assert "sqlalchemy" not in packages  # the direct writer took the host list
            assert len(store.list_jobs(kind="export-invoices")) == 2
            # The worker's parts: claim, finish, and the LISTEN connection.
            claimed = store.claim("w1", 2, 30, ["export-invoices"])
            assert store.complete("w1", [j.id for j in claimed]) == 2
            listener = store.listener()
            store.enqueue("export-invoices")
            assert listener.wait(10)
            listener.close()
        finally:
            store.dispose()
    finally:
        run_cli("db", "downgrade", "base", "--database-url", url, env=env, timeout=120)


def test_a_session_on_a_server_that_takes_no_writes_is_a_lost_connection(
    pg_store: Store, pg_database: str, table_prefix: str
) -> None:
    """What a client meets when a name still leads to the old primary, now a replica: every
    write fails with SQLSTATE 25006. Here the server says so of every session
    (``default_transaction_read_only``); the replica itself is in ``test_failover.py``."""
    url = f"{pg_database}?options=-c%20default_transaction_read_only%3Don"
    store = open_store(url, prefix=table_prefix)

    def session() -> int:
        with store.engine.connect() as conn:
            return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())

    try:
        before = session()
        with pytest.raises(DatabaseUnavailable, match="read-only transaction"):
            store.enqueue_run("nightly", SLOT, max_attempts=3)
        assert session() != before  # that session was discarded, not handed out again
        with pytest.raises(DatabaseUnavailable, match="read-only transaction"):
            store.claim("w1", 1, 30, None)
        with pytest.raises(DatabaseUnavailable, match="read-only transaction"):
            open_writer(url, table_prefix).enqueue_run("nightly", SLOT, max_attempts=3)
    finally:
        store.dispose()
