"""Outcomes held through an outage (issue #30, item 2): the finisher writes them fenced by the
attempt and logs the ones it may not write; the reaper lets this worker's held outcomes and
every living worker's renewals go first after an outage (``worker/contact.py``).

SQLite in a temporary file: what is tested here is the worker's side; the fence itself runs on
every backend in ``tests/contract/test_attempt_fence_contract.py``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.store import Store, open_store
from migrate_cron.store.models import Job
from migrate_cron.worker.contact import Contact
from migrate_cron.worker.finisher import Finisher
from migrate_cron.worker.heartbeat import Reaper
from migrate_cron.worker.inflight import Ledger
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.outcome import Outcome
from tests.worker.helpers import wait_for


@pytest.fixture
def local_store(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path / 'queue.db'}")
    store.create_schema()
    try:
        yield store
    finally:
        store.dispose()


def _expire_and_reap(store: Store, worker: str, n: int) -> list[Job]:
    jobs = store.claim(worker, n, lease=0.01)
    wait_for(lambda: store.reap().reopened, 5, what="the leases to expire and be reaped")
    return jobs


def test_held_outcomes_land_unless_another_attempt_took_the_job(local_store: Store) -> None:
    store = local_store
    for _ in range(2):
        store.enqueue("k", max_attempts=3)
    jobs = _expire_and_reap(store, "w1", 2)
    [taken] = store.claim("w2", 1, lease=30)  # one of them runs again meanwhile
    [kept] = [j for j in jobs if j.id != taken.id]
    ledger = Ledger()
    ledger.add(jobs)
    stream = io.StringIO()
    finisher = Finisher(store, "w1", ledger, WorkerLog(stream, delay=0))
    finisher.start()
    for job in jobs:
        ledger.start(job.id)
        ledger.finished(job.id)
        finisher.put(job, Outcome.done())
    wait_for(lambda: len(ledger) == 0, 10, what="the outcomes to be settled")
    finisher.stop(give_up_after=5)
    assert store.get(kept.id).state == "done"  # type: ignore[union-attr]
    assert store.get(taken.id).state == "running"  # type: ignore[union-attr]
    [line] = [x for x in stream.getvalue().splitlines() if "outcome-dropped" in x]
    assert f"id={taken.id} attempt=1" in line
    assert "taken over by another attempt (2)" in line


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_contact_says_when_the_database_is_back_after_a_failure_or_a_stall() -> None:
    clock = _Clock()
    backs: list[float] = []
    contact = Contact(2.0, on_back=lambda: backs.append(clock.now), clock=clock)
    contact.ok()
    assert backs == [] and contact.back_for() == float("inf")
    contact.failed()
    assert contact.back_for() == 0.0  # still away
    clock.now += 5
    contact.ok()
    clock.now += 1
    contact.ok()
    assert backs == [1005.0] and contact.back_for() == 1.0
    clock.now += 2.5  # no call completed for longer than the gap: a stall, then an answer
    contact.ok()
    assert backs == [1005.0, 1008.5] and contact.back_for() == 0.0


def test_the_reaper_waits_for_held_outcomes_and_one_lease_after_an_outage(
    local_store: Store,
) -> None:
    store = local_store
    job_id = store.enqueue("k", max_attempts=3).job_id
    store.claim("gone", 1, lease=0.01)
    wait_for(
        lambda: store.get(job_id).locked_until < store.db_now(),  # type: ignore[union-attr,operator]
        5,
        what="the lease to expire",
    )
    clock = _Clock()
    contact = Contact(10.0, clock=clock)
    holding = [True]
    kicked: list[bool] = []
    stream = io.StringIO()
    reaper = Reaper(
        store,
        "w1",
        WorkerLog(stream, delay=0),
        interval=1.0,
        on_answer=contact.ok,
        on_outage=contact.failed,
        settle=3.0,
        back_for=contact.back_for,
        holding=lambda: holding[0],
        write_held=lambda: kicked.append(True),
    )
    contact.failed()  # the outage
    reaper.reap()  # its answer ends the outage; this worker still holds outcomes
    assert kicked and store.get(job_id).state == "running"  # type: ignore[union-attr]
    holding[0] = False
    clock.now += 2.9
    reaper.reap()  # written; but the lease since the database's return is not over
    assert store.get(job_id).state == "running"  # type: ignore[union-attr]
    clock.now += 0.2
    reaper.reap()
    assert store.get(job_id).state == "open"  # type: ignore[union-attr]
    assert stream.getvalue().count("reap-waits") == 1
