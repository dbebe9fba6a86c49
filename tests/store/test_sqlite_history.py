"""SQLite's attempt history in one statement (``sqlite_store.history_sql``, ``json_each``):
it records what the portable three statements record, each run once — also a run those
statements wrote before (its time compared as the text SQLAlchemy stores) — and only for
jobs this worker holds in the states asked for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from migrate_cron.store import Store
from migrate_cron.store.dialects.sqlite_store import SQLiteStore
from migrate_cron.store.models import AttemptRun
from migrate_cron.vocabulary import AttemptOutcome

pytestmark = pytest.mark.parametrize("backend", ["sqlite"])

FAILED = AttemptOutcome.FAILED
HELD = ("running",)  # claimed and not finished: the state the runs below are recorded in


def _runs(store: Store, kind: str, second: int = 0) -> dict[int, AttemptRun]:
    for _ in range(3):
        store.enqueue(kind)
    jobs = store.claim("w", 3, kinds=[kind])
    start = datetime(2026, 12, 5, 10, 0, second, tzinfo=UTC)  # whole seconds: ".000000" kept
    texts = [("exit 1", "✓ out\n", 1), (None, None, None), ("nul \x00 here", "x" * 9000, 2)]
    runs = {}
    for i, (job, (error, output, code)) in enumerate(zip(jobs, texts, strict=True)):
        begun = start + timedelta(seconds=i)
        ended = begun + timedelta(microseconds=5)
        ready = begun - timedelta(minutes=1) if i else None
        runs[job.id] = AttemptRun(begun, ended, code, error, output, ready)
    return runs


def _history(store: Store, runs: dict[int, AttemptRun]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for job_id in runs:
        for a in store.attempts(job_id):
            row = (a.attempt, a.worker, a.started_at, a.finished_at, a.outcome, a.exit_code)
            out.append((*row, a.error, a.output_tail, a.ready_at))
    return out


def _portable(store: Store) -> object:
    """The dialect-neutral ``_insert_attempts`` (three statements), bound to ``store``."""
    return super(SQLiteStore, store)._insert_attempts  # type: ignore[misc]


def test_one_statement_records_what_the_portable_statements_record(store: Store) -> None:
    assert isinstance(store, SQLiteStore)
    portable, json_each = _runs(store, "a"), _runs(store, "b")
    with store.transaction() as conn:
        assert _portable(store)(conn, "w", FAILED, HELD, portable) == 3  # type: ignore[operator]
        assert store._insert_attempts(conn, "w", FAILED, HELD, json_each) == 3
    mine, theirs = _history(store, json_each), _history(store, portable)
    assert mine == theirs and len(mine) == 3
    assert mine[2][6] == "nul \ufffd here"  # NUL stored as U+FFFD, as everywhere
    assert mine[0][7] == "✓ out\n" and len(str(mine[2][7])) < 9000  # the output's tail


def test_each_run_is_recorded_once_and_only_where_asked(store: Store) -> None:
    runs = _runs(store, "c")
    with store.transaction() as conn:
        # Written first by the portable statements, then again in one statement: kept once.
        assert _portable(store)(conn, "w", FAILED, HELD, runs) == 3  # type: ignore[operator]
        assert store._insert_attempts(conn, "w", FAILED, HELD, runs) == 0
    later = _runs(store, "d", second=30)
    with store.transaction() as conn:
        assert store._insert_attempts(conn, "v", FAILED, HELD, later) == 0  # not v's jobs
        assert store._insert_attempts(conn, "w", FAILED, ("done",), later) == 0  # not done
        assert store._insert_attempts(conn, "w", FAILED, HELD, later) == 3
        assert store._insert_attempts(conn, "w", FAILED, HELD, later) == 0
    assert len(_history(store, {**runs, **later})) == 6
