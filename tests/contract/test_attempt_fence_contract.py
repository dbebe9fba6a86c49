"""Finishing is fenced by the attempt, not by the clock (issue #30, item 2), on every backend.

A worker that held an outcome through an outage longer than its lease writes it when the
database is back: it lands if nobody has claimed the job since — the reaper reopened it or
shelved it — and changes nothing once another attempt took it over or the job is finished.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun, Failure


def _reaped(store: Store, max_attempts: int) -> int:
    """A job claimed by ``w1`` (attempt 1) whose lease expired and was reaped."""
    job_id = store.enqueue("k", max_attempts=max_attempts).job_id
    [job] = store.claim("w1", 1, lease=0.01)
    assert job.attempts == 1
    deadline = datetime.now(UTC) + timedelta(seconds=5)
    while True:
        result = store.reap()
        if result.reopened or result.failed:
            return job_id
        assert datetime.now(UTC) < deadline, "the lease did not expire in time"


def test_a_held_outcome_lands_after_the_reaper_reopened_the_job(store: Store) -> None:
    job_id = _reaped(store, max_attempts=3)
    reaped = store.get(job_id)
    assert reaped is not None and (reaped.state, reaped.locked_by) == ("open", None)
    now = datetime.now(UTC)
    run = AttemptRun(started_at=now, finished_at=now, exit_code=0, error=None, output="ok\n")
    written = store.complete(
        "w1", [job_id], outputs={job_id: "ok\n"}, runs={job_id: run}, attempts={job_id: 1}
    )
    assert written == 1
    done = store.get(job_id)
    assert done is not None and (done.state, done.locked_by, done.output) == ("done", "w1", "ok\n")
    assert done.last_error is None
    assert [a.attempt for a in store.attempts(job_id)] == ([1] if store.attempts_enabled() else [])
    assert store.claim("w2", 1, lease=30) == []  # it does not run again
    # Written again (a commit whose answer was lost): nothing matches, nothing to explain.
    assert store.complete("w1", [job_id], attempts={job_id: 1}) == 0
    assert store.fenced_out("w1", {job_id: 1}) == {}


def test_a_held_outcome_lands_after_the_reaper_shelved_the_last_attempt(store: Store) -> None:
    job_id = _reaped(store, max_attempts=1)
    shelved = store.get(job_id)
    assert shelved is not None and (shelved.state, shelved.locked_by) == ("failed", None)
    assert store.complete("w1", [job_id], attempts={job_id: 1}) == 1
    done = store.get(job_id)
    assert done is not None and (done.state, done.last_error) == ("done", None)


def test_a_held_failure_lands_once_and_schedules_its_retry(store: Store) -> None:
    job_id = _reaped(store, max_attempts=3)
    assert store.fail("w1", job_id, "exit 1", retry_in=3600, attempt=1) == "open"
    row = store.get(job_id)
    assert row is not None and row.last_error == "exit 1" and row.attempts == 1
    assert row.run_at > store.db_now() + timedelta(seconds=3500)
    assert store.fail("w1", job_id, "exit 1", retry_in=3600, attempt=1) is None  # once


def test_no_outcome_lands_once_another_attempt_claimed_the_job(store: Store) -> None:
    job_id = _reaped(store, max_attempts=3)
    [again] = store.claim("w2", 1, lease=30)
    assert again.id == job_id and again.attempts == 2
    assert store.complete("w1", [job_id], attempts={job_id: 1}) == 0
    assert store.fail("w1", job_id, "late", attempt=1) is None
    assert store.release("w1", [job_id], attempts={job_id: 1}) == 0
    assert store.fenced_out("w1", {job_id: 1}) == {job_id: "taken over by another attempt (2)"}
    row = store.get(job_id)
    assert row is not None and (row.state, row.locked_by, row.attempts) == ("running", "w2", 2)
    assert store.complete("w2", [job_id], attempts={job_id: 2}) == 1


def test_an_old_attempt_does_not_land_on_the_same_workers_new_claim(store: Store) -> None:
    job_id = _reaped(store, max_attempts=3)
    [again] = store.claim("w1", 1, lease=30)  # the same worker claims it again: attempt 2
    assert again.attempts == 2
    assert store.complete("w1", [job_id], attempts={job_id: 1}) == 0
    assert store.get(job_id).state == "running"  # type: ignore[union-attr]
    assert store.complete("w1", [job_id], attempts={job_id: 2}) == 1


def test_a_finished_cancelled_or_deleted_job_is_not_overwritten(store: Store) -> None:
    done_id = store.enqueue("k").job_id
    cancelled_id = store.enqueue("k").job_id
    store.claim("w1", 2, lease=30)
    assert store.complete("w1", [done_id], attempts={done_id: 1}) == 1
    assert store.fail("w1", done_id, "late", attempt=1) is None
    assert store.fenced_out("w2", {done_id: 1}) == {done_id: "already finished (done)"}
    assert store.cancel([cancelled_id]) == 1
    assert store.complete("w1", [cancelled_id], attempts={cancelled_id: 1}) == 0
    missing = cancelled_id + 1000
    assert store.fenced_out("w1", {cancelled_id: 1, missing: 1}) == {
        cancelled_id: "cancelled by an operator",
        missing: "the job no longer exists",
    }


def test_one_batch_holds_outcomes_of_different_attempts(store: Store) -> None:
    first = store.enqueue("k", max_attempts=3).job_id
    second = store.enqueue("k", max_attempts=3).job_id
    store.claim("w1", 2, lease=30)
    assert store.fail("w1", second, "exit 1", retry_in=0, attempt=1) == "open"
    [retried] = store.claim("w1", 1, lease=30)
    assert (retried.id, retried.attempts) == (second, 2)
    attempts = {first: 1, second: 2}
    assert store.complete("w1", [first, second], attempts=attempts) == 2
    assert {j.state for j in store.list_jobs()} == {"done"}


def test_releasing_a_reaped_job_gives_its_attempt_back(store: Store) -> None:
    job_id = _reaped(store, max_attempts=3)
    assert store.release("w1", [job_id], attempts={job_id: 1}) == 1
    row = store.get(job_id)
    assert row is not None and (row.state, row.attempts, row.locked_by) == ("open", 0, None)


def test_a_batch_with_its_history_lands_only_where_the_attempt_holds(store: Store) -> None:
    """Successes with runs and attempts and nothing else (PostgreSQL writes them and their
    history in one statement): each row is fenced by its own attempt, and only the rows
    written get a history row; written again, nothing changes."""
    taken = _reaped(store, max_attempts=3)
    [again] = store.claim("w2", 1, lease=30)  # attempt 2 by another worker: w1's does not land
    assert again.id == taken
    held = store.enqueue("k").job_id
    [mine] = store.claim("w1", 1, lease=30)  # still w1's, attempt 1: lands
    assert mine.id == held
    reaped = _reaped(store, max_attempts=3)  # attempt 1, reopened by the reaper: lands
    now = datetime.now(UTC)
    runs = {
        i: AttemptRun(started_at=now, finished_at=now, exit_code=None, error=None, output=None)
        for i in (reaped, taken, held)
    }
    attempts = {reaped: 1, taken: 1, held: 1}
    assert store.complete("w1", [reaped, taken, held], runs=runs, attempts=attempts) == 2
    states = {j.id: (j.state, j.locked_by) for j in store.list_jobs()}
    assert states == {reaped: ("done", "w1"), taken: ("running", "w2"), held: ("done", "w1")}
    if store.attempts_enabled():
        assert [(a.attempt, a.worker) for a in store.attempts(reaped)] == [(1, "w1")]
        assert [(a.attempt, a.worker) for a in store.attempts(held)] == [(1, "w1")]
        assert store.attempts(taken) == []
    assert store.complete("w1", [reaped, taken, held], runs=runs, attempts=attempts) == 0
    if store.attempts_enabled():
        assert len(store.attempts(reaped)) == len(store.attempts(held)) == 1


def test_a_batch_of_failures_lands_only_where_the_attempt_holds(store: Store) -> None:
    """``fail_many`` (PostgreSQL: one statement with the history): each failure is fenced by
    its own attempt — it lands on a job the reaper reopened or shelved and on one still held,
    not on one another attempt took over; written again, nothing changes."""
    taken = _reaped(store, max_attempts=3)
    [again] = store.claim("w2", 1, lease=30)
    assert again.id == taken
    held = store.enqueue("k").job_id
    [mine] = store.claim("w1", 1, lease=30)
    assert mine.id == held
    shelved = _reaped(store, max_attempts=1)  # its last attempt: the reaper failed it
    reopened = _reaped(store, max_attempts=3)  # last: a later claim would take it again
    now = datetime.now(UTC)
    run = AttemptRun(started_at=now, finished_at=now, exit_code=1, error="exit 1")
    failures = [
        Failure(job_id, 1, "exit 1", retry_in=3600, run=run)
        for job_id in (reopened, shelved, taken, held)
    ]
    states = store.fail_many("w1", failures)
    assert states == {reopened: "open", shelved: "failed", taken: None, held: "open"}
    rows = {j.id: (j.state, j.locked_by) for j in store.list_jobs()}
    assert rows[taken] == ("running", "w2")
    assert rows[reopened] == rows[held] == ("open", "w1") and rows[shelved] == ("failed", "w1")
    if store.attempts_enabled():
        for job_id in (reopened, shelved, held):
            assert [(a.attempt, a.outcome) for a in store.attempts(job_id)] == [(1, "failed")]
        assert store.attempts(taken) == []
    assert set(store.fail_many("w1", failures).values()) == {None}
    if store.attempts_enabled():
        assert sum(len(store.attempts(j)) for j in (reopened, shelved, held)) == 3
