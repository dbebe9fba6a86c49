"""Contract cases for ``store/attempts.py``: the ``job_attempts`` history, on every backend.

Each finished run leaves one row, written in the outcome's own transaction and fenced like it:
a batch written again after an outage records each run once, and a worker whose lease was
taken over records nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from migrate_cron.store import Store
from migrate_cron.store.attempts import OUTPUT_TAIL
from migrate_cron.store.models import AttemptRun


def _run(seconds: float, start: datetime | None = None, **kw: object) -> AttemptRun:
    began = start or datetime(2026, 12, 3, 10, 0, 0, 250_000, tzinfo=UTC)
    return AttemptRun(
        started_at=began,
        finished_at=began + timedelta(seconds=seconds),
        **kw,  # type: ignore[arg-type]
    )


def test_done_and_failed_runs_are_recorded_with_their_own_times(store: Store) -> None:
    assert store.attempts_enabled()
    ok = store.enqueue("k").job_id
    bad = store.enqueue("k", max_attempts=1).job_id
    store.claim("w1", 2, lease=30, kinds=["k"])
    run_ok = _run(1.5, exit_code=0, output="hello")
    assert store.complete("w1", [ok], runs={ok: run_ok}) == 1
    state = store.fail("w1", bad, "exit code 3", run=_run(0.25, exit_code=3, error="exit code 3"))
    assert state == "failed"

    [a] = store.attempts(ok)
    assert (a.job_id, a.kind, a.attempt, a.worker, a.outcome) == (ok, "k", 1, "w1", "done")
    assert a.started_at == run_ok.started_at and a.finished_at == run_ok.finished_at
    assert a.duration == 1.5 and a.exit_code == 0 and a.output_tail == "hello"
    [b] = store.attempts(bad)
    assert (b.outcome, b.exit_code, b.error, b.duration) == ("failed", 3, "exit code 3", 0.25)
    assert store.attempts(10_000_000) == []


def test_retries_are_numbered_in_the_order_they_ran(store: Store) -> None:
    job_id = store.enqueue("k", max_attempts=3).job_id
    start = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    for n in range(2):
        store.claim("w", 1, lease=30, kinds=["k"])
        began = start + timedelta(minutes=n)
        assert store.fail("w", job_id, "boom", run=_run(1, began, error="boom")) == "open"
    store.claim("w", 1, lease=30, kinds=["k"])
    store.complete("w", [job_id], runs={job_id: _run(2, start + timedelta(minutes=5))})
    history = store.attempts(job_id)
    assert [(a.attempt, a.outcome) for a in history] == [(1, "failed"), (2, "failed"), (3, "done")]


def test_a_batch_written_twice_records_each_run_once(store: Store) -> None:
    ids = [store.enqueue("k").job_id for _ in range(3)]
    store.claim("w", 3, lease=30, kinds=["k"])
    runs = {i: _run(0.5 + n, exit_code=0) for n, i in enumerate(ids)}
    assert store.complete("w", ids, runs=runs) == 3
    # The worker did not see the commit (the connection dropped) and writes the batch again.
    assert store.complete("w", ids, runs=runs) == 0
    assert [len(store.attempts(i)) for i in ids] == [1, 1, 1]


def test_a_run_fenced_out_records_nothing(store: Store) -> None:
    job_id = store.enqueue("k").job_id
    store.claim("w1", 1, lease=30, kinds=["k"])
    store.release("w1", [job_id])  # the lease is gone; another worker takes the job
    store.claim("w2", 1, lease=30, kinds=["k"])
    assert store.complete("w1", [job_id], runs={job_id: _run(1)}) == 0
    assert store.fail("w1", job_id, "late", run=_run(1)) is None
    assert store.attempts(job_id) == []
    store.complete("w2", [job_id], runs={job_id: _run(2)})
    assert [a.worker for a in store.attempts(job_id)] == ["w2"]


def test_output_keeps_its_tail_and_bad_bytes_are_stored(store: Store) -> None:
    job_id = store.enqueue("k").job_id
    store.claim("w", 1, lease=30, kinds=["k"])
    output = "x" * 10_000 + "nul\x00 surrogate\udcff end"
    store.complete("w", [job_id], runs={job_id: _run(1, output=output, error=None)})
    [a] = store.attempts(job_id)
    assert a.output_tail is not None and len(a.output_tail) <= OUTPUT_TAIL + 8
    assert a.output_tail.endswith(" end") and "\x00" not in a.output_tail


def test_cleanup_deletes_a_jobs_history_with_it(store: Store) -> None:
    done = store.enqueue("k").job_id
    running = store.enqueue("k").job_id
    store.claim("w", 2, lease=30, kinds=["k"])
    store.complete("w", [done], runs={done: _run(1)})
    store.fail("w", running, "boom", retry_in=3600, run=_run(2))  # open again: not cleaned
    store.cleanup(done_older_than=0, failed_older_than=None)
    assert store.attempts(done) == []
    assert [a.outcome for a in store.attempts(running)] == ["failed"]


def test_each_run_keeps_when_its_wait_began(store: Store) -> None:
    """``ready_at`` is the claim's ``run_at``, kept even after a failure moved ``run_at`` to
    the retry: the history holds every run's exact wait (the console's queue-age chart)."""
    assert store.console_enabled()
    job_id = store.enqueue("k", max_attempts=2).job_id
    [job] = store.claim("w", 1, lease=30, kinds=["k"])
    run = _run(1, error="boom", ready_at=job.run_at)
    assert store.fail("w", job_id, "boom", retry_in=0, run=run) == "open"
    [again] = store.claim("w", 1, lease=30, kinds=["k"])
    later = datetime(2026, 12, 3, 11, 0, tzinfo=UTC)
    assert store.complete("w", [job_id], runs={job_id: _run(1, later, ready_at=again.run_at)}) == 1
    first, second = store.attempts(job_id)
    assert first.ready_at == job.run_at and second.ready_at == again.run_at
    assert second.ready_at is not None and first.ready_at is not None
    assert second.ready_at >= first.ready_at
