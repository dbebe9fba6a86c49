"""``migrate-cron worker --table`` as a user runs it: clear errors before anything is claimed,
long rows kept by the heartbeat, and a graceful SIGTERM that gives a running row back."""

from __future__ import annotations

import shlex
import signal
from pathlib import Path

import pytest
from sqlalchemy import column, create_engine, select

from migrate_cron.store.dialects import normalize_url
from tests.conftest import run_cli
from tests.faults.orders import (
    DONE,
    FAILED,
    PENDING,
    SHIPPED,
    apply_claim_revision,
    create_orders,
    registry_text,
    status_counts,
    table_spec,
)
from tests.faults.procs import Fleet, cli_env, read_results, wait_for


def test_unknown_table_is_exit_2_with_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "migrate-cron.toml").write_text(registry_text("notifications", "n", "true"))
    result = run_cli("worker", "--table", "notification", cwd=tmp_path)
    assert result.returncode == 2
    assert "did you mean 'notifications'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_claim_columns_name_the_generate_command(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    name = f"{table_prefix}orders"
    (tmp_path / "migrate-cron.toml").write_text(registry_text("orders", name, "true"))
    engine = create_engine(normalize_url(db_url))
    table = create_orders(engine, name, pending=1, untouched=0)
    try:
        result = run_cli(
            "worker", "--table", "orders", "--once", "--database-url", db_url, cwd=tmp_path
        )
        assert result.returncode == 1
        assert "migrate-cron generate migration --claim-table orders" in result.stderr
        assert status_counts(engine, table) == {PENDING: 1}
    finally:
        table.drop(engine)
        engine.dispose()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_long_rows_keep_their_lease_and_sigterm_gives_a_running_row_back(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """Row 1 runs longer than the lease: the heartbeat keeps it, a second worker does not
    take it over. Row 2 runs for a minute: SIGTERM stops it after the grace and gives the row
    back as ready, its attempt not counted."""
    name = f"{table_prefix}orders"
    results = tmp_path / "runs.txt"
    command = (
        f'printf "%s %s\\n" "$MIGRATE_CRON_ROW_KEY" "$PPID" >> {shlex.quote(str(results))}; '
        'if [ "$MIGRATE_CRON_ROW_KEY" = 1 ]; then sleep 3; else sleep 60; fi'
    )
    body = registry_text("orders", name, command, lease=1.5, batch=1)
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(body)
    engine = create_engine(normalize_url(db_url))
    table = create_orders(engine, name, pending=2, untouched=1)
    apply_claim_revision(db_url, table_spec(body), tmp_path)
    env = cli_env(db_url, "", registry)
    args = ["worker", "--table", "orders", "--concurrency", "1", "--heartbeat", "0.3"]
    try:
        with Fleet(tmp_path) as fleet:
            workers = [
                fleet.start([*args, "--grace", "0.5"], env, label="worker", cwd=tmp_path)
                for _ in range(2)
            ]
            wait_for(lambda: status_counts(engine, table).get(DONE), 30, "row 1 done")
            wait_for(lambda: len(read_results(results)) == 2, 10, "row 2 started")
            for w in workers:
                w.signal(signal.SIGTERM)
            for w in workers:
                assert w.wait(20) == 0, w.output()[-2000:]
        runs = read_results(results)
        assert sorted(key for key, _ in runs) == [1, 2]  # row 1 once, despite the short lease
        assert status_counts(engine, table) == {DONE: 1, PENDING: 1, SHIPPED: 1}
        with engine.connect() as conn:
            attempts, locked_by = conn.execute(
                select(column("attempts"), column("locked_by"))
                .select_from(table)
                .where(table.c.id == 2)
            ).one()
        assert (attempts, locked_by) == (0, None)
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()


HANDLER = """
import os

from migrate_cron.handlers import PermanentFailure


def ship(key, ctx):
    with open(os.environ["MCT_RESULTS"], "a") as fh:
        fh.write(f"{key} {os.getpid()}\\n")
    if key == 3:
        raise PermanentFailure("no shipping address")
"""


def test_a_python_handler_gets_the_row_key_as_its_argument(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    name = f"{table_prefix}orders"
    body = registry_text("orders", name, "true").replace(
        "command = '''true'''", 'handler = "orders_handler:ship"'
    )
    (tmp_path / "migrate-cron.toml").write_text(body)
    (tmp_path / "orders_handler.py").write_text(HANDLER)
    results = tmp_path / "runs.txt"
    engine = create_engine(normalize_url(db_url))
    table = create_orders(engine, name, pending=4, untouched=1)
    apply_claim_revision(db_url, table_spec(body), tmp_path)
    try:
        result = run_cli(
            "worker",
            "--table",
            "orders",
            "--once",
            "--database-url",
            db_url,
            cwd=tmp_path,
            env={"MCT_RESULTS": str(results)},
        )
        assert result.returncode == 0, result.stderr
        assert sorted(key for key, _ in read_results(results)) == [1, 2, 3, 4]
        assert status_counts(engine, table) == {DONE: 3, FAILED: 1, SHIPPED: 1}
        with engine.connect() as conn:
            error = conn.execute(
                select(column("last_error")).select_from(table).where(table.c.id == 3)
            ).scalar_one()
        assert error == "PermanentFailure: no shipping address"
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()
