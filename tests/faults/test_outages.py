"""The database goes away while workers and the scheduler run: a real PostgreSQL restart (on a
throwaway server this test starts), and a network cut (the server closes every connection:
``pg_terminate_backend`` on PostgreSQL, ``KILL CONNECTION`` on MariaDB).

Each process logs the outage, reconnects with backoff within 10 s of the database answering
again, and nothing is lost: every queued job is done, and the scheduler's every-minute job
(compressed to one slot per real second) has one job for every slot, without a gap where the
database was down (missed slots are backfilled by the job's policy).
"""

from __future__ import annotations

import contextlib
import random
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy.engine import make_url

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.store import Store, open_store
from tests.conftest import IN_CI
from tests.faults.pgserver import ThrowawayPostgres, server_bin_dir, throwaway_postgres
from tests.faults.procs import (
    Fleet,
    Proc,
    chaos_registry,
    cli_env,
    read_results,
    tcp_client_ports,
    wait_for,
    write_handler_project,
)

T = TypeVar("T")
RECONNECT_BOUND = 10.0  # seconds from "the database answers" to "each process works again"
JOBS = 240
JOB_MS = 150
REGISTRY = chaos_registry()
WORKER_ARGS = [
    "worker",
    "--concurrency",
    "4",
    "--heartbeat",
    "1",
    "--lease",
    "10",
    "--poll",
    "0.2",
    "--grace",
    "5",
]


def quiet(fn: Callable[[], T]) -> T | None:
    """Run a check from the test's own connection; None while the database is away."""
    try:
        return fn()
    except DatabaseUnavailable:
        return None


@dataclass
class Scenario:
    store: Store
    fleet: Fleet
    workers: list[Proc]
    scheduler: Proc
    results: Path

    def runs_by(self, pid: int) -> int:
        return sum(1 for _, p in read_results(self.results) if p == pid)

    def slots(self) -> int | None:
        return quiet(lambda: len(self.store.runs("tick", limit=100_000)))

    def wait_recovered(self, fault: str, up_at: float, before: dict[int, int], slots: int) -> None:
        """Each worker starts a new job, and the scheduler records a new slot, within
        RECONNECT_BOUND seconds of ``up_at``."""
        for w in self.workers:
            wait_for(
                lambda w=w: self.runs_by(w.pid) > before[w.pid],
                RECONNECT_BOUND - (time.monotonic() - up_at),
                f"worker {w.pid} to run jobs again after the {fault}:\n{w.output()[-1500:]}",
            )
        wait_for(
            lambda: (self.slots() or 0) > slots,
            max(0.1, RECONNECT_BOUND - (time.monotonic() - up_at)),
            f"the scheduler to enqueue again after the {fault}:\n{self.scheduler.output()[-1500:]}",
        )
        print(f"{fault}: every process working again {time.monotonic() - up_at:.1f}s after")


@pytest.fixture
def scenario(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Build and tear down a scenario on a database URL (given to the returned function)."""
    stores: list[Store] = []
    fleets: list[Fleet] = []

    def build(db_url: str, prefix: str) -> Scenario:
        store = open_store(db_url, prefix=prefix)
        stores.append(store)
        store.create_schema()
        registry = write_handler_project(tmp_path / "project", REGISTRY)
        results = tmp_path / "results.txt"
        env = cli_env(db_url, prefix, registry, MCT_RESULTS=str(results))
        store.enqueue_many(
            "chaos",
            [{"ms": random.randint(JOB_MS // 2, JOB_MS)} for _ in range(JOBS)],
            max_attempts=100,
        )
        fleet = Fleet(tmp_path)
        fleets.append(fleet)
        workers = [
            fleet.start(WORKER_ARGS, env, label="worker", cwd=registry.parent) for _ in range(2)
        ]
        start = datetime(2026, 1, 5, tzinfo=UTC).isoformat()
        scheduler = fleet.start(
            ["scheduler", "--now", start, "--speed", "60", "--lease-ttl", "3"],
            env,
            label="scheduler",
            cwd=registry.parent,
        )
        sc = Scenario(store, fleet, workers, scheduler, results)
        for w in workers:
            wait_for(lambda w=w: sc.runs_by(w.pid) >= 3, 60, f"worker {w.pid} to run jobs")
        wait_for(lambda: (sc.slots() or 0) >= 2, 60, "the scheduler's first slots")
        return sc

    try:
        yield build
    finally:
        for f in fleets:
            f.kill_all()
        for s in stores:
            with contextlib.suppress(Exception):
                s.drop_schema()
            s.dispose()


def snapshot(sc: Scenario) -> tuple[dict[int, int], int]:
    return {w.pid: sc.runs_by(w.pid) for w in sc.workers}, wait_for(sc.slots, 30, "the slot count")


def finish_and_check(sc: Scenario, outage_words: tuple[str, ...]) -> None:
    """Stop the scheduler, let the workers drain, stop them; then nothing may be missing."""
    sc.scheduler.signal(signal.SIGTERM)
    assert sc.scheduler.wait(30) == 0, sc.scheduler.output()[-2000:]
    wait_for(
        lambda: quiet(lambda: sc.store.count_jobs(states=["open", "running"])) == 0,
        120,
        "the queue to drain",
        interval=0.2,
    )
    for w in sc.workers:
        w.signal(signal.SIGTERM)
    for w in sc.workers:
        assert w.wait(30) == 0, w.output()[-2000:]
    store = sc.store
    chaos = {j.id for j in store.list_jobs(kind="chaos", limit=10_000)}
    ticks = store.list_jobs(kind="tick", limit=100_000)
    ran = Counter(job_id for job_id, _ in read_results(sc.results))
    assert len(chaos) == JOBS
    assert chaos <= set(ran), "a queued job never ran"
    assert {j.id for j in ticks} <= set(ran), "a scheduled job never ran"
    assert store.count_jobs(states=["done"]) == JOBS + len(ticks)
    assert store.count_jobs(states=["open", "running", "failed", "cancelled"]) == 0
    # One job per slot and no gap: the slots are consecutive minutes from the first to the last.
    slots = sorted(j.scheduled_for for j in ticks if j.scheduled_for is not None)
    assert len(slots) == len(ticks) == len(set(slots))
    expected = [slots[0] + timedelta(minutes=i) for i in range(len(slots))]
    assert slots == expected, "a slot was lost while the database was away"
    assert len(store.runs("tick", limit=100_000)) == len(slots)
    ids = chaos | {j.id for j in ticks}
    print(
        f"{store.family}: jobs {len(ids)}, lost {len(ids - set(ran))}, "
        f"run twice {sum(n - 1 for job_id, n in ran.items() if job_id in ids)}, left running "
        f"{store.count_jobs(states=['running'])}"
    )
    for proc in (*sc.workers, sc.scheduler):
        out = proc.output()
        assert "Traceback" not in out, out[-3000:]
    for w in sc.workers:
        assert any(word in w.output() for word in outage_words), w.output()[-3000:]


@pytest.fixture
def pg_server() -> Iterator[ThrowawayPostgres]:
    if server_bin_dir() is None:
        message = "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin) to start a server"
        if IN_CI:
            pytest.fail(f"CI requires {message}", pytrace=False)
        pytest.skip(message)
    with throwaway_postgres() as server:
        yield server


@pytest.mark.slow
def test_postgresql_restart_is_logged_waited_out_and_loses_nothing(
    pg_server: ThrowawayPostgres, scenario: Any, table_prefix: str
) -> None:
    sc: Scenario = scenario(pg_server.url, table_prefix)
    before, slots = snapshot(sc)
    down_at = time.monotonic()
    pg_server.stop("fast")
    # Every process notices while the server is down, says so, and tries again with a growing
    # wait (the server stays down until each has failed twice).
    for w in sc.workers:
        wait_for(
            lambda w=w: (
                re.search(r"db-unavailable .*retrying in 0\.5s", w.output())
                and re.search(r"db-unavailable .*retrying in 1\.0s", w.output())
            ),
            15,
            f"worker {w.pid} to log the outage and back off",
        )
    wait_for(
        lambda: " outage " in sc.scheduler.output() and "retry_in=2.0" in sc.scheduler.output(),
        15,
        "the scheduler to log the outage and back off",
    )
    pg_server.start()
    up_at = time.monotonic()
    print(f"server away for {up_at - down_at:.1f}s (from the stop to the started server)")
    sc.wait_recovered("restart", up_at, before, slots)
    # A new run alone does not prove a worker talked to the server again: it may start a job
    # it had claimed ahead before the outage. The log line comes with its first answer.
    for w in sc.workers:
        wait_for(
            lambda w=w: "the database answers again" in w.output(),
            max(0.1, RECONNECT_BOUND - (time.monotonic() - up_at)),
            f"worker {w.pid} to log that the database answers again",
        )
    finish_and_check(sc, ("db-unavailable",))


def cut_connections(store: Store, ports: set[int]) -> int:
    """The server closes the sessions whose client ports are ``ports`` (the workers' and the
    scheduler's): ``pg_terminate_backend`` on PostgreSQL, ``KILL CONNECTION`` on MariaDB."""
    with store.engine.connect() as conn:
        if store.family == "postgresql":
            rows = conn.exec_driver_sql(
                "SELECT pid, client_port FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
            ).all()
            sessions = [(int(pid), port) for pid, port in rows if port in ports]
            for pid, _ in sessions:
                conn.exec_driver_sql(f"SELECT pg_terminate_backend({pid})")
            return len(sessions)
        rows = conn.exec_driver_sql(
            "SELECT id, host FROM information_schema.PROCESSLIST WHERE id <> CONNECTION_ID()"
        ).all()
        sessions = [int(i) for i, host in rows if int(str(host).rsplit(":", 1)[-1] or 0) in ports]
        for i in sessions:
            with contextlib.suppress(Exception):  # it went away by itself meanwhile
                conn.exec_driver_sql(f"KILL CONNECTION {i}")
        return len(sessions)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_network_cut_every_connection_closed_by_the_server(
    scenario: Any, db_url: str, table_prefix: str
) -> None:
    sc: Scenario = scenario(db_url, table_prefix)
    server_port = make_url(db_url).port
    assert server_port is not None
    procs = [*sc.workers, sc.scheduler]
    for round_ in range(2):
        before, slots = snapshot(sc)
        # Each process holds a connection when the cut comes (after the previous round, a pool
        # reconnects on its next use, which can be a moment away for an idle process).
        held = wait_for(
            lambda: (
                by_proc
                if all(by_proc := [tcp_client_ports(p.pid, server_port) for p in procs])
                else None
            ),
            RECONNECT_BOUND,
            f"every process to hold a connection before cut {round_ + 1}",
        )
        cut = cut_connections(sc.store, set().union(*held))
        up_at = time.monotonic()
        assert cut >= len(procs), f"the server closed {cut} of {sum(map(len, held))} sessions"
        sc.store.engine.dispose()  # ours were spared, but start clean like the others
        sc.wait_recovered(f"cut {round_ + 1}", up_at, before, slots)
    finish_and_check(sc, ("db-unavailable", "listen-lost"))
