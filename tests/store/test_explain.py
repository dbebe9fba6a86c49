"""The claim query uses the claim index (PostgreSQL EXPLAIN) on a table with 100k done rows
and 100 open rows — the case where a missing partial index turns every claim into a scan."""

from __future__ import annotations

from sqlalchemy import text

from migrate_cron.store import Store


def test_claim_uses_partial_claim_index_on_postgresql(pg_store: Store) -> None:
    job = pg_store.tables.job.name
    with pg_store.engine.begin() as conn:
        conn.execute(
            text(
                f"INSERT INTO {job} (kind, state, attempts, max_attempts, run_at, created_at,"
                " finished_at) SELECT 'k', 'done', 1, 5, now() - interval '1 day', now(), now()"
                " FROM generate_series(1, 100000)"
            )
        )
        conn.execute(
            text(
                f"INSERT INTO {job} (kind, state, attempts, max_attempts, run_at, created_at)"
                " SELECT 'k', 'open', 0, 5, now(), now() FROM generate_series(1, 100)"
            )
        )
        conn.execute(text(f"ANALYZE {job}"))
    claim_sql = _claim_sql(pg_store)
    with pg_store.engine.begin() as conn:
        plan = "\n".join(
            r[0] for r in conn.exec_driver_sql("EXPLAIN " + claim_sql[0], claim_sql[1])
        )
        conn.rollback()
    assert f"{job}_claim_idx" in plan, plan
    assert f"Seq Scan on {job}" not in plan, plan


def _claim_sql(store: Store) -> tuple[str, dict[str, object]]:
    """Compile the store's real claim statement (not a copy of it) for EXPLAIN."""
    captured: dict[str, tuple[str, dict[str, object]]] = {}
    from sqlalchemy import event

    def grab(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if "SKIP LOCKED" in statement and "claim" not in captured:
            captured["claim"] = (statement, parameters)

    event.listen(store.engine, "before_cursor_execute", grab)
    try:
        store.claim("explainer", 10, lease=30)
    finally:
        event.remove(store.engine, "before_cursor_execute", grab)
    statement, params = captured["claim"]
    return statement, dict(params)
