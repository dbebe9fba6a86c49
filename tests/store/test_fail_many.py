"""``fail_many``: a batch of failed attempts writes, row for row, what ``fail`` writes for
each — on PostgreSQL as one statement (``postgresql_finish.fail_statement``), elsewhere in
one transaction — and a fenced-out failure writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, select

from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun, Failure, Job

#: (retry_in, terminal, max_attempts, error, output) of each job of a batch: a retry, a
#: terminal failure, one whose attempts are spent, and texts no column takes as they are.
CASES: list[tuple[float, bool, int, str, str | None]] = [
    (30.0, False, 5, "exit 1: disk full", "partial output\n"),
    (5.0, True, 5, "bad payload: not retried", None),
    (0.5, False, 1, "timeout after 60 s", "x" * 5000),
    (1.25, False, 3, "nul \x00 and lone \udcff surrogate", "✓ done 50 %\n\x00"),
]

COLUMNS = ("state", "attempts", "locked_by", "locked_until", "last_error", "output")


def _claim_batch(store: Store, kind: str) -> list[Job]:
    for retry_in, terminal, max_attempts, _, _ in CASES:
        store.enqueue(kind, {"case": [retry_in, terminal]}, max_attempts=max_attempts)
    jobs = store.claim("w", len(CASES), kinds=[kind])
    assert len(jobs) == len(CASES)
    return sorted(jobs, key=lambda j: j.id)


def _failures(jobs: list[Job]) -> list[Failure]:
    now = datetime.now(UTC)
    out = []
    for job, (retry_in, terminal, _, error, output) in zip(jobs, CASES, strict=True):
        run = AttemptRun(now - timedelta(seconds=2), now, 1, error, output, job.run_at)
        out.append(Failure(job.id, job.attempts, error, retry_in, output, terminal, run))
    return out


def _rows(store: Store, jobs: list[Job]) -> list[dict[str, Any]]:
    job = store.tables.job
    columns = [job.c[name] for name in (*COLUMNS, "run_at", "finished_at")]
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(*columns).where(job.c.id.in_([j.id for j in jobs])).order_by(job.c.id)
        ).all()
    return [dict(row._mapping) for row in rows]


def _history(store: Store, jobs: list[Job]) -> list[tuple[Any, ...]]:
    return [
        (a.attempt, a.outcome, a.exit_code, a.error, a.output_tail)
        for j in jobs
        for a in store.attempts(j.id)
    ]


def test_a_batch_of_failures_writes_what_fail_writes_for_each(store: Store) -> None:
    one_by_one = _claim_batch(store, "each")
    batched = _claim_batch(store, "batch")
    before = datetime.now(UTC)
    expected = {
        f.job_id: store.fail(
            "w",
            f.job_id,
            f.error,
            retry_in=f.retry_in,
            output=f.output,
            terminal=f.terminal,
            run=f.run,
            attempt=f.attempt,
        )
        for f in _failures(one_by_one)
    }
    got = store.fail_many("w", _failures(batched))
    after = datetime.now(UTC)
    assert list(expected.values()) == ["open", "failed", "failed", "open"]
    assert list(got.values()) == list(expected.values())
    assert list(got) == [j.id for j in batched]
    each_rows, batch_rows = _rows(store, one_by_one), _rows(store, batched)
    for case, each, mine in zip(CASES, each_rows, batch_rows, strict=True):
        assert {k: mine[k] for k in COLUMNS} == {k: each[k] for k in COLUMNS}, case
        retry_in, terminal, max_attempts, _, _ = case
        spent = terminal or max_attempts <= 1
        if spent:  # run_at kept, finished now
            assert mine["finished_at"] is not None and each["finished_at"] is not None
        else:  # due again after its own delay
            assert mine["finished_at"] is None
            slack = timedelta(seconds=1)
            assert before + timedelta(seconds=retry_in) - slack <= _aware(mine["run_at"])
            assert _aware(mine["run_at"]) <= after + timedelta(seconds=retry_in) + slack
    assert _history(store, batched) == _history(store, one_by_one)
    assert len(_history(store, batched)) == len(CASES)


def test_a_fenced_out_failure_writes_nothing_and_the_others_land(store: Store) -> None:
    jobs = _claim_batch(store, "fenced")
    failures = _failures(jobs)
    # The second job's lease was taken back and another worker claimed it (attempt 2).
    stolen = jobs[1]
    job = store.tables.job
    with store.engine.begin() as conn:
        conn.execute(
            job.update()
            .where(job.c.id == stolen.id)
            .values(locked_by="other", attempts=stolen.attempts + 1)
        )
    states = store.fail_many("w", failures)
    assert states[stolen.id] is None
    assert [states[j.id] for j in jobs if j.id != stolen.id] == ["open", "failed", "open"]
    row = store.get(stolen.id)
    assert row is not None and row.state == "running" and row.locked_by == "other"
    assert store.attempts(stolen.id) == []
    # Written again (an answer lost in an outage): nothing changes, no run is recorded twice.
    again = store.fail_many("w", failures)
    assert set(again.values()) == {None}
    assert len(_history(store, jobs)) == len(CASES) - 1


def test_failures_without_their_attempt_are_fenced_on_the_lease(store: Store) -> None:
    """An attempt of None (a caller that does not know it) is fenced on the lease, as
    ``fail`` does: written while this worker still holds the job."""
    jobs = _claim_batch(store, "lease")
    failures = [
        Failure(j.id, None, "lost the lease?", 10.0, run=f.run)
        for j, f in zip(jobs, _failures(jobs), strict=True)
    ]
    states = store.fail_many("w", failures[:2])
    assert list(states.values()) == ["open", "open"]
    assert store.fail_many("other", failures[2:]) == {jobs[2].id: None, jobs[3].id: None}


@pytest.mark.parametrize("backend", ["postgresql"])
def test_on_postgresql_a_batch_is_one_statement(store: Store) -> None:
    """The batch and its history in one statement, where each failure was a transaction of
    three (the UPDATE, the history's INSERT, the state read back)."""
    failures = _failures(_claim_batch(store, "counted"))
    store.fail_many("w", failures[:2])  # the history table's check, cached from here on
    sent: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
    states = store.fail_many("w", failures[2:])
    assert list(states.values()) == ["failed", "open"]
    assert len(sent) == 1 and "INSERT INTO" in sent[0] and "UPDATE" in sent[0]


def _aware(stamp: datetime) -> datetime:
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
