"""The finish path's batched statements (issue 34), on every backend: one UPDATE writes every
output of a batch, one INSERT … SELECT writes its history, and neither touches a job fenced
out mid-batch nor records a run twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun


def _run(output: str | None, seconds: int = 0) -> AttemptRun:
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=seconds)
    return AttemptRun(started_at=at, finished_at=at, exit_code=0, output=output)


def _taken_over(store: Store, job_id: int) -> None:
    """``w1``'s lease on ``job_id`` expired, the reaper took it back and ``w2`` claimed it."""
    from migrate_cron.store.models import JobState

    job = store.tables.job
    with store.transaction() as conn:  # the lease ran out (no sleep: set it in the past)
        conn.execute(
            job.update()
            .where(job.c.id == job_id)
            .values(locked_until=datetime.now(UTC) - timedelta(seconds=60))
        )
    assert store.reap().reopened == 1
    [again] = store.claim("w2", 1, lease=30)
    assert (again.id, again.attempts, again.state) == (job_id, 2, JobState.RUNNING)


def test_a_batch_with_mixed_outputs_writes_each_its_own(store: Store) -> None:
    ids = [store.enqueue("k").job_id for _ in range(4)]
    claimed = store.claim("w1", 4, lease=30)
    assert sorted(j.id for j in claimed) == sorted(ids)
    outputs = {ids[0]: "first\n", ids[1]: "é second ✓\n", ids[3]: ""}
    runs = {i: _run(outputs.get(i)) for i in ids}
    written = store.complete("w1", ids, outputs=outputs, runs=runs, attempts={i: 1 for i in ids})
    assert written == 4
    got = {i: store.get(i) for i in ids}
    assert {i: (j.state, j.output) for i, j in got.items() if j} == {
        ids[0]: ("done", "first\n"),
        ids[1]: ("done", "é second ✓\n"),
        ids[2]: ("done", None),
        ids[3]: ("done", ""),
    }
    if store.attempts_enabled():
        tails = {i: [(a.attempt, a.worker, a.output_tail) for a in store.attempts(i)] for i in ids}
        assert tails == {
            ids[0]: [(1, "w1", "first\n")],
            ids[1]: [(1, "w1", "é second ✓\n")],
            ids[2]: [(1, "w1", None)],
            ids[3]: [(1, "w1", None)],
        }


def test_a_job_fenced_out_mid_batch_keeps_its_row(store: Store) -> None:
    ids = [store.enqueue("k").job_id for _ in range(3)]
    store.claim("w1", 3, lease=30)
    lost = ids[1]
    _taken_over(store, lost)
    before = store.get(lost)
    runs = {i: _run(f"out {i}") for i in ids}
    written = store.complete(
        "w1",
        ids,
        outputs={i: f"out {i}" for i in ids},
        runs=runs,
        attempts={i: 1 for i in ids},
    )
    assert written == 2
    assert store.get(lost) == before  # state, lease, output: untouched
    for i in (ids[0], ids[2]):
        job = store.get(i)
        assert job is not None and (job.state, job.output) == ("done", f"out {i}")
    if store.attempts_enabled():
        assert store.attempts(lost) == []
        assert [len(store.attempts(i)) for i in (ids[0], ids[2])] == [1, 1]
    assert store.fenced_out("w1", {i: 1 for i in ids}) == {
        lost: "taken over by another attempt (2)"
    }


def test_history_rows_are_written_exactly_once(store: Store) -> None:
    ids = [store.enqueue("k").job_id for _ in range(3)]
    store.claim("w1", 3, lease=30)
    runs = {i: _run("x") for i in ids}
    attempts = {i: 1 for i in ids}
    assert store.complete("w1", ids, runs=runs, attempts=attempts) == 3
    # The same batch again (a commit whose answer was lost): no job, no history row changes.
    assert store.complete("w1", ids, runs=runs, attempts=attempts) == 0
    if store.attempts_enabled():
        assert [len(store.attempts(i)) for i in ids] == [1, 1, 1]
    # A second run of a job (the first failed, it was claimed again) adds its own row.
    job_id = store.enqueue("k").job_id
    [_first] = store.claim("w1", 1, lease=30)
    assert store.fail("w1", job_id, "boom", run=_run("x"), attempt=1) == "open"
    [again] = store.claim("w1", 1, lease=30)
    assert (again.id, again.attempts) == (job_id, 2)
    assert store.complete("w1", [job_id], runs={job_id: _run("y", 5)}, attempts={job_id: 2}) == 1
    if store.attempts_enabled():
        assert [(a.attempt, a.output_tail) for a in store.attempts(job_id)] == [(1, "x"), (2, "y")]


def test_output_so_far_is_written_for_the_held_jobs_only(store: Store) -> None:
    ids = [store.enqueue("k").job_id for _ in range(3)]
    store.claim("w1", 3, lease=30)
    _taken_over(store, ids[2])
    texts = {ids[0]: "one\n", ids[1]: "two ✓\n", ids[2]: "not mine\n"}
    assert store.write_output("w1", texts) == 2
    assert [j.output for j in map(store.get, ids) if j] == ["one\n", "two ✓\n", None]
    assert store.write_output("w1", {ids[1]: "two, later\n"}) == 1
    later = store.get(ids[1])
    assert later is not None and later.output == "two, later\n"
