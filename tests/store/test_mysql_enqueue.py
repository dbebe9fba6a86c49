"""``enqueue_many`` on MariaDB sends one INSERT per chunk. The portable executemany went out as
one statement per row: PyMySQL folds an executemany into a single INSERT only when the VALUES
list is all parameters, and ours carries the server clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, select

from migrate_cron.store import Store
from migrate_cron.vocabulary import JobState
from tests.conftest import fresh_store


@pytest.fixture
def mariadb_store(mariadb_database: str, table_prefix: str) -> Iterator[Store]:
    with fresh_store(mariadb_database, table_prefix) as s:
        yield s


def test_enqueue_many_is_one_insert_per_chunk_on_mariadb(mariadb_store: Store) -> None:
    inserts: list[bool] = []

    def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT"):
            inserts.append(bool(rest[-1]))  # executemany

    payloads = [{"n": i, "text": "✓"} for i in range(2500)] + [None]
    event.listen(mariadb_store.engine, "before_cursor_execute", seen)
    try:
        assert mariadb_store.enqueue_many("bulk", payloads, max_attempts=3, chunk=1000) == 2501
    finally:
        event.remove(mariadb_store.engine, "before_cursor_execute", seen)
    assert inserts == [False, False, False]
    job = mariadb_store.tables.job
    with mariadb_store.engine.connect() as conn:
        rows = conn.execute(
            select(
                job.c.kind, job.c.payload, job.c.state, job.c.attempts, job.c.max_attempts
            ).order_by(job.c.id)
        ).all()
    assert [r.payload for r in rows] == payloads
    assert {(r.kind, r.state, r.attempts, r.max_attempts) for r in rows} == {
        ("bulk", JobState.OPEN, 0, 3)
    }
    claimed = mariadb_store.claim("w", 5, lease=30)
    assert [j.payload for j in claimed] == payloads[:5]


def test_enqueue_many_cuts_a_batch_of_big_payloads_under_the_packet_limit(
    mariadb_store: Store,
) -> None:
    """20 MiB of payloads in one chunk: one statement would pass the server's 16 MiB
    ``max_allowed_packet``; cut into statements, every job is stored."""
    inserts: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT"):
            inserts.append(statement)

    payloads = [{"n": i, "blob": "x" * 100_000} for i in range(200)]
    event.listen(mariadb_store.engine, "before_cursor_execute", seen)
    try:
        assert mariadb_store.enqueue_many("big", payloads, chunk=1000) == 200
    finally:
        event.remove(mariadb_store.engine, "before_cursor_execute", seen)
    assert 2 <= len(inserts) <= 10
    job = mariadb_store.tables.job
    with mariadb_store.engine.connect() as conn:
        stored = conn.execute(select(job.c.payload).order_by(job.c.id)).scalars().all()
    assert [p["n"] for p in stored] == list(range(200))
    assert all(len(p["blob"]) == 100_000 for p in stored)


def test_enqueue_one_job_writes_what_the_portable_insert_wrote(mariadb_store: Store) -> None:
    """``enqueue`` without a ref is one fixed INSERT text on MariaDB: the same values as the
    Core INSERT it replaced — the server's clock for ``run_at`` and ``created_at``, a delay
    on that clock, given times in UTC, the payload as JSON (None as JSON null)."""
    from datetime import UTC, datetime, timedelta, timezone

    store = mariadb_store
    now = store.db_now()
    paris = timezone(timedelta(hours=1))
    at = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=paris)
    slot = datetime(2031, 5, 6, 6, 0, tzinfo=UTC)
    plain = store.enqueue("k", {"text": "✓ é"})
    later = store.enqueue("k", None, delay=90, max_attempts=7)
    given = store.enqueue("k", [1, 2], run_at=at, scheduled_for=slot)
    assert plain.created and later.created and given.created
    job = store.tables.job
    with store.engine.connect() as conn:
        rows = {
            r.id: r
            for r in conn.execute(
                select(job.c.id, job.c.payload, job.c.state, job.c.attempts, job.c.max_attempts,
                       job.c.run_at, job.c.scheduled_for, job.c.created_at, job.c.ref)
            )
        }  # fmt: skip
    a, b, c = rows[plain.job_id], rows[later.job_id], rows[given.job_id]
    assert (a.payload, a.state, a.attempts, a.ref, a.scheduled_for) == (
        {"text": "✓ é"}, JobState.OPEN, 0, None, None
    )  # fmt: skip
    assert a.run_at == a.created_at and abs(a.created_at - now) < timedelta(minutes=1)
    assert b.payload is None and b.max_attempts == 7
    assert b.run_at - b.created_at == timedelta(seconds=90)
    assert c.payload == [1, 2] and c.run_at == at and c.scheduled_for == slot
    with pytest.raises(Exception, match="naive datetime"):
        store.enqueue("k", None, run_at=datetime(2031, 1, 1))
