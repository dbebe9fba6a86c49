"""PostgreSQL's plans for the worker's hot statements (EXPLAIN of the statements the store
sends): the claim uses the claim index on a table with 100k done rows and 100 open rows (the
case where a missing partial index turns every claim into a scan), and a batch is finished by
id even when the statistics predate a backlog."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Connection, event, text

from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun, Failure


def test_claim_uses_partial_claim_index_on_postgresql(pg_store: Store) -> None:
    job = pg_store.tables.job.name
    with pg_store.engine.begin() as conn:
        _insert(conn, job, "done", 100_000)
        _insert(conn, job, "open", 100)
        conn.execute(text(f"ANALYZE {job}"))
    claim_sql = _claim_sql(pg_store)
    with pg_store.engine.begin() as conn:
        plan = "\n".join(
            r[0] for r in conn.exec_driver_sql("EXPLAIN " + claim_sql[0], claim_sql[1])
        )
        conn.rollback()
    assert f"{job}_claim_idx" in plan, plan
    assert f"Seq Scan on {job}" not in plan, plan


def _insert(conn: Connection, job: str, state: str, n: int) -> None:
    """``n`` jobs of kind ``k``: done a day ago (one attempt), or open and due now."""
    if state == "done":
        columns, values = "attempts, run_at, finished_at", "1, now() - interval '1 day', now()"
    else:
        columns, values = "attempts, run_at", "0, now()"
    conn.execute(
        text(
            f"INSERT INTO {job} (kind, state, max_attempts, created_at, {columns}) "
            f"SELECT 'k', '{state}', 5, now(), {values} FROM generate_series(1, {n})"
        )
    )


def _claim_sql(store: Store) -> tuple[str, dict[str, object]]:
    """Compile the store's real claim statement (not a copy of it) for EXPLAIN."""
    captured: dict[str, tuple[str, dict[str, object]]] = {}

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


def test_a_batch_is_finished_by_id_when_statistics_predate_the_backlog(pg_store: Store) -> None:
    """Statistics taken while the table held only done jobs, then a backlog arrives (before
    autovacuum analyzes again): the statements that finish a batch still find its rows by id,
    through the primary key. Their fence, bare, let PostgreSQL estimate that one row was open
    and read every open row through the (state, …) indexes for each batch."""
    job = pg_store.tables.job.name
    with pg_store.engine.begin() as conn:
        _insert(conn, job, "done", 1000)
        conn.execute(text(f"ANALYZE {job}"))
        conn.execute(text(f"ALTER TABLE {job} SET (autovacuum_enabled = false)"))
        _insert(conn, job, "open", 20_000)
    now = datetime.now(UTC)

    def finish_done() -> None:
        jobs = pg_store.claim("w", 20, lease=30, kinds=["k"])
        runs = {j.id: AttemptRun(now, now, 0, None, None, j.run_at) for j in jobs}
        attempts = {j.id: j.attempts for j in jobs}
        assert pg_store.complete("w", list(runs), runs=runs, attempts=attempts) == 20

    def finish_failed() -> None:
        jobs = pg_store.claim("w", 20, lease=30, kinds=["k"])
        failures = [
            Failure(j.id, j.attempts, "boom", 60.0, None, False, AttemptRun(now, now, 1))
            for j in jobs
        ]
        assert all(state == "open" for state in pg_store.fail_many("w", failures).values())

    for finish in (finish_done, finish_failed):
        statement, params = _captured(
            pg_store, finish, lambda sql: sql.lstrip().startswith("WITH given")
        )
        with pg_store.engine.begin() as conn:
            plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params))
            conn.rollback()
        assert f"Index Scan using {job}_pkey on {job}" in plan, plan
        for index in ("state_finished_idx", "state_locked_idx", "kind_state_idx", "claim_idx"):
            assert f"{job}_{index}" not in plan, plan


def _captured(
    store: Store, call: Callable[[], None], wanted: Callable[[str], bool]
) -> tuple[str, dict[str, object]]:
    """The first statement ``call`` sends that ``wanted`` picks, with its parameters."""
    captured: list[tuple[str, dict[str, object]]] = []

    def grab(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if wanted(statement) and not captured:
            captured.append((statement, dict(parameters)))

    event.listen(store.engine, "before_cursor_execute", grab)
    try:
        call()
    finally:
        event.remove(store.engine, "before_cursor_execute", grab)
    assert captured, "the statement was not sent"
    return captured[0]
