"""``generate migration --claim-table``: the revision joins the user's real Alembic history,
the real ``alembic`` applies it and reverts it on SQLite, PostgreSQL and MariaDB, and neither
direction changes the table's own columns or rows."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import create_engine, inspect

from migrate_cron.store.dialects import normalize_url
from migrate_cron.store.rows import CLAIM_COLUMNS
from tests.conftest import run_cli
from tests.faults.orders import create_orders, fingerprint, registry_text
from tests.generate.test_user_project import alembic, drop_leftovers, ok, user_project


def _columns(url: str, table: str) -> dict[str, dict[str, object]]:
    engine = create_engine(normalize_url(url))
    try:
        return {c["name"]: c for c in inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def _indexes(url: str, table: str) -> dict[str, list[str | None]]:
    engine = create_engine(normalize_url(url))
    try:
        return {str(i["name"]): i["column_names"] for i in inspect(engine).get_indexes(table)}
    finally:
        engine.dispose()


def test_claim_revision_applies_and_reverts_without_touching_the_table(
    db_url: str, backend: str, table_prefix: str, tmp_path: Path
) -> None:
    project = user_project(tmp_path, db_url, table_prefix)
    name = f"{table_prefix}orders"
    (project / "migrate-cron.toml").write_text(registry_text("orders", name, "true"))
    engine = create_engine(normalize_url(db_url))
    try:
        table = create_orders(engine, name, pending=50, untouched=10)
        before = fingerprint(engine, table)
        own = set(_columns(db_url, name))
        ok(alembic(project, "upgrade", "head"))  # the user's own history first

        result = run_cli("generate", "migration", "--claim-table", "orders", "--json", cwd=project)
        assert result.returncode == 0, result.stderr
        written = json.loads(result.stdout)
        assert written["down_revision"] == "u0001"  # appended to the user's single head
        assert written["columns"] == list(CLAIM_COLUMNS)
        source = Path(written["path"]).read_text()
        assert "migrate_cron" not in source.replace("migrate-cron", "")  # self-contained

        ok(alembic(project, "upgrade", "head"))
        after = _columns(db_url, name)
        assert set(after) == own | set(CLAIM_COLUMNS)
        assert not after["attempts"]["nullable"]
        claim, lease = f"{name}_claim_idx", f"{name}_lease_idx"
        indexes = _indexes(db_url, name)
        if backend == "postgresql":
            assert indexes[claim] == ["created_at", "id"]  # partial: WHERE status = 'pending'
            assert indexes[lease] == ["locked_until"]
        else:
            assert indexes[claim] == ["status", "created_at", "id"]
            assert indexes[lease] == ["status", "locked_until"]
        assert fingerprint(engine, table) == before

        again = run_cli("generate", "migration", "--claim-table", "orders", cwd=project)
        assert again.returncode == 1 and "already in the history" in again.stderr

        ok(alembic(project, "downgrade", "-1"))
        assert set(_columns(db_url, name)) == own
        assert claim not in _indexes(db_url, name) and lease not in _indexes(db_url, name)
        assert fingerprint(engine, table) == before
    finally:
        engine.dispose()
        drop_leftovers(db_url, table_prefix)


def test_unknown_claim_table_is_a_usage_error_with_the_closest_name(tmp_path: Path) -> None:
    (tmp_path / "migrate-cron.toml").write_text(registry_text("orders", "orders", "true"))
    result = run_cli("generate", "migration", "--claim-table", "order", cwd=tmp_path)
    assert result.returncode == 2
    assert "did you mean 'orders'?" in result.stderr


def test_offline_sql_shows_the_partial_index_on_postgresql(tmp_path: Path) -> None:
    (tmp_path / "migrate-cron.toml").write_text(registry_text("orders", "orders", "true"))
    args = ("generate", "migration", "--claim-table", "orders", "--sql", "--dialect")
    pg = run_cli(*args, "postgresql", cwd=tmp_path)
    assert pg.returncode == 0, pg.stderr
    assert "CREATE INDEX orders_claim_idx ON orders (created_at, id) WHERE status = 'pending'" in (
        pg.stdout
    )
    maria = run_cli(*args, "mariadb", cwd=tmp_path)
    assert "CREATE INDEX orders_claim_idx ON orders (status, created_at, id)" in maria.stdout
    assert "DATETIME(6)" in maria.stdout
