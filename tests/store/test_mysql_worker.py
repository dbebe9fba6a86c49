"""MariaDB's worker statements (``mysql_statements.py``): the claim as fixed texts whose rows
come back as one ``JSON_ARRAY`` each, and a batch of successes with its history as a fenced
UPDATE and one ``INSERT … SELECT`` from ``JSON_TABLE``. What they read and write must be what
the Core statements they replace read and wrote."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import astuple
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, update

from migrate_cron.store import Store
from migrate_cron.store.attempts import OUTPUT_TAIL
from migrate_cron.store.models import AttemptRun
from tests.conftest import fresh_store

#: Text a job may print or raise: every escape JSON and SQL have, and beyond the BMP.
TRICKY = "a😀b ✓ é \x01\x1f\t\n\r \" \\ ' %s %(x)s \u2028 \ufffd"


@pytest.fixture
def mariadb_store(mariadb_database: str, table_prefix: str) -> Iterator[Store]:
    with fresh_store(mariadb_database, table_prefix) as s:
        yield s


def test_claimed_jobs_are_the_rows_as_the_store_reads_them(mariadb_store: Store) -> None:
    store = mariadb_store
    payloads: list[Any] = [None, {"a": [1, "é", None]}, "text", 3, [], TRICKY]
    ids = [
        store.enqueue("k", payload=p, ref=f"{TRICKY}{i}" if i % 2 else None).job_id
        for i, p in enumerate(payloads)
    ]
    slot = datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    ids.append(store.enqueue("k", scheduled_for=slot).job_id)
    job = store.tables.job
    with store.transaction() as conn:  # a previous attempt's error and output
        conn.execute(update(job).where(job.c.id == ids[1]).values(last_error=TRICKY, output="o"))
    claimed = store.claim("w1", 10, lease=30.0)
    assert sorted(j.id for j in claimed) == sorted(ids)
    for j in claimed:
        row = store.get(j.id)
        assert row is not None
        assert astuple(j) == astuple(row)
        assert j.locked_until - j.started_at == timedelta(seconds=30)  # type: ignore[operator]
    assert [j.payload for j in sorted(claimed, key=lambda j: j.id)][: len(payloads)] == payloads


def test_claim_by_kind_and_excluding_kinds(mariadb_store: Store) -> None:
    store = mariadb_store
    a = [store.enqueue("a").job_id for _ in range(2)]
    b = store.enqueue("b").job_id
    c = store.enqueue("c").job_id
    assert [j.id for j in store.claim("w1", 10, kinds=["a", "x"])] == a
    assert [j.id for j in store.claim("w1", 10, exclude=["c"])] == [b]
    assert [j.id for j in store.claim("w1", 10)] == [c]
    assert store.claim("w1", 10) == []


def test_history_of_a_batch_keeps_its_texts_and_times(mariadb_store: Store) -> None:
    store = mariadb_store
    ids = [store.enqueue("k").job_id for _ in range(3)]
    jobs = store.claim("w1", 3, lease=30.0)
    start = datetime(2030, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    runs = {
        ids[0]: AttemptRun(start, start + timedelta(microseconds=1), 0, None, None, start),
        ids[1]: AttemptRun(start, start, None, TRICKY + "\x00", "x" * 5000 + TRICKY, None),
        ids[2]: AttemptRun(start, start + timedelta(hours=1), 3, "", "", start),
    }
    attempts = {j.id: j.attempts for j in jobs}
    assert store.complete("w1", ids, runs=runs, attempts=attempts) == 3
    for i in ids:
        [row] = store.attempts(i)
        run = runs[i]
        assert (row.outcome, row.attempt, row.worker) == ("done", 1, "w1")
        assert (row.started_at, row.finished_at) == (run.started_at, run.finished_at)
        assert (row.exit_code, row.ready_at) == (run.exit_code, run.ready_at)
    assert store.attempts(ids[1])[0].error == TRICKY + "\ufffd"
    assert store.attempts(ids[1])[0].output_tail == ("x" * 5000 + TRICKY)[-OUTPUT_TAIL:]
    assert (store.attempts(ids[2])[0].error, store.attempts(ids[2])[0].output_tail) == ("", None)


def test_a_failed_run_is_recorded_by_the_same_insert(mariadb_store: Store) -> None:
    store = mariadb_store
    job_id = store.enqueue("k", max_attempts=1).job_id
    [job] = store.claim("w1", 1)
    now = datetime.now(UTC)
    run = AttemptRun(now, now, 1, TRICKY, TRICKY)
    assert store.fail("w1", job_id, TRICKY, run=run, attempt=job.attempts) == "failed"
    [row] = store.attempts(job_id)
    assert (row.outcome, row.error, row.output_tail, row.exit_code) == (
        "failed",
        TRICKY,
        TRICKY,
        1,
    )


def test_a_batch_of_successes_is_two_statements_and_a_commit(mariadb_store: Store) -> None:
    """The fenced UPDATE and the history's INSERT … SELECT, in one transaction: three round
    trips (PyMySQL's BEGIN is implicit). The portable path read the jobs and the runs
    present before inserting: five."""
    store = mariadb_store
    ids = [store.enqueue("k").job_id for _ in range(5)]
    jobs = store.claim("w1", 5)
    now = datetime.now(UTC)
    runs = {i: AttemptRun(now, now) for i in ids}
    attempts = {j.id: j.attempts for j in jobs}
    store.attempts_enabled()
    store.console_enabled()
    sent: list[str] = []
    commits: list[bool] = []

    def statement(conn: Any, cursor: Any, text: str, *rest: Any) -> None:
        sent.append(text.split()[0].upper())

    event.listen(store.engine, "before_cursor_execute", statement)
    event.listen(store.engine, "commit", lambda conn: commits.append(True))
    try:
        assert store.complete("w1", ids, runs=runs, attempts=attempts) == 5
    finally:
        event.remove(store.engine, "before_cursor_execute", statement)
    assert (sent, len(commits)) == (["UPDATE", "INSERT"], 1)
    assert all(len(store.attempts(i)) == 1 for i in ids)


def test_a_claim_whose_window_another_holds_takes_the_next_rows(mariadb_store: Store) -> None:
    """The first statement reads the first N ready rows without locking; rows another claim
    holds (not yet committed) are skipped, and the scan of the claim index takes the next
    ones, so concurrent claimers still get full batches and never the same row."""
    store = mariadb_store
    ids = [store.enqueue("k").job_id for _ in range(10)]
    with store.transaction() as holding:
        first = store._claim(holding, "w1", 4, 30.0, None)  # held, uncommitted
        assert sorted(j.id for j in first) == ids[:4]
        second = store.claim("w2", 4, lease=30.0)  # its window: the same 4 rows, all held
        assert [j.id for j in second] == ids[4:8]
        third = store.claim("w3", 5, lease=30.0)  # 2 left: both statements find them
        assert [j.id for j in third] == ids[8:]
    assert {j.id: j.locked_by for j in store.list_jobs(limit=20)} == {
        **{i: "w1" for i in ids[:4]},
        **{i: "w2" for i in ids[4:8]},
        **{i: "w3" for i in ids[8:]},
    }
