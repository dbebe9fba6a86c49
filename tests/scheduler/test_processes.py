"""Several real scheduler / enqueue processes on one database (the installed command):
one job per slot with and without leadership, and a standby taking over from a killed leader."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from migrate_cron.scheduler.leader import DEFAULT_LEASE_NAME
from migrate_cron.store import Store
from tests.conftest import cli_path
from tests.faults.procs import wait_for

DAY = datetime(2026, 3, 29, tzinfo=UTC)  # the spring-forward day in Berlin
REGISTRY = """
[defaults]
mode = "scheduler"
command = "true"

[jobs.five]
schedule = "*/5 * * * *"
policy = "backfill"

[jobs.hourly]
schedule = "7 * * * *"
timezone = "Europe/Berlin"
policy = "run-once"

[jobs.nightly]
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
"""


def env_for(db_url: str, table_prefix: str, registry: Path) -> dict[str, str]:
    return {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
    }


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [cli_path(), *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stop_all(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


def assert_one_job_per_slot(store: Store, name: str, slots: list[datetime]) -> None:
    jobs = store.list_jobs(kind=name, limit=100_000)
    counts = Counter(j.scheduled_for for j in jobs)
    assert sorted(counts) == slots, name
    assert set(counts.values()) == {1}, f"{name}: a slot got more than one job"
    runs = store.runs(name, limit=100_000)
    assert len(runs) == len(slots)
    assert {r["outcome"] for r in runs} == {"enqueued"}


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    path = tmp_path / "migrate-cron.toml"
    path.write_text(REGISTRY)
    return path


@contextlib.contextmanager
def writes_held(store: Store) -> Iterator[Callable[[list[subprocess.Popen[str]]], int]]:
    """Hold every write to the slot table (reads go on) until the block ends; yields how many
    of the given processes are waiting to write: PostgreSQL and MariaDB say so in their session
    lists, a SQLite writer waits in its busy handler's sleep (its main thread in nanosleep)."""
    runs = store.tables.scheduled_runs.name
    sleeping: set[int] = set()

    def sqlite_waiting(procs: list[subprocess.Popen[str]]) -> int:
        for p in procs:
            with contextlib.suppress(OSError), open(f"/proc/{p.pid}/syscall") as f:
                if f.read().split()[0] in ("35", "230"):  # nanosleep, clock_nanosleep
                    sleeping.add(p.pid)  # it stays there until the hold ends
        return len(sleeping)

    def server_waiting(sql: str) -> Callable[[list[subprocess.Popen[str]]], int]:
        def count(_procs: list[subprocess.Popen[str]]) -> int:
            with store.engine.connect() as conn:
                return int(conn.execute(text(sql), {"table": f"%{runs}%"}).scalar_one())

        return count

    with store.engine.connect() as hold:
        if store.family == "sqlite":
            with hold.begin():  # BEGIN IMMEDIATE: writers wait, WAL readers do not
                yield sqlite_waiting
        elif store.family == "postgresql":
            with hold.begin():
                hold.exec_driver_sql(f'LOCK TABLE "{runs}" IN EXCLUSIVE MODE')
                yield server_waiting(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE :table AND pid <> pg_backend_pid()"
                )
        else:
            hold.exec_driver_sql(f"LOCK TABLES `{runs}` READ")
            try:
                yield server_waiting(
                    "SELECT count(*) FROM information_schema.PROCESSLIST "
                    "WHERE STATE LIKE 'Waiting for table%' AND INFO LIKE :table"
                )
            finally:
                hold.exec_driver_sql("UNLOCK TABLES")


@pytest.mark.slow
@pytest.mark.parametrize("lease", [True, False], ids=["lease", "split-brain"])
def test_four_schedulers_over_a_compressed_day_make_one_job_per_slot(
    store: Store, db_url: str, table_prefix: str, registry: Path, lease: bool
) -> None:
    """Each process replays the same day (jumping from slot to slot). With the lease they take
    turns; without it (every process believes it leads) they write the same slots at once."""
    env = env_for(db_url, table_prefix, registry)
    args = [
        "scheduler",
        "--now",
        (DAY - timedelta(seconds=1)).isoformat(),
        "--until",
        (DAY + timedelta(days=1)).isoformat(),
        "--speed",
        "0",
        "--lease-ttl",
        "2",
    ]
    if not lease:
        args.append("--no-lease")
    procs: list[subprocess.Popen[str]] = []
    logs = []
    try:
        # Without the lease, the four must really write the same day at once: the day replays
        # in ~1 s, and on a loaded machine a process that starts late would load positions past
        # --until and write nothing. Their writes wait until all four are waiting to write.
        with contextlib.nullcontext() if lease else writes_held(store) as waiting:
            procs = [start(args, env) for _ in range(4)]
            if waiting is not None:
                wait_for(lambda: waiting(procs) == 4, 120, "four schedulers waiting to write")
        for p in procs:
            _out, err = p.communicate(timeout=240)
            assert p.returncode == 0, err
            assert "error" not in err.lower(), err
            logs.append(err)
    finally:
        stop_all(procs)
    if lease:
        # A process reaches --until only by leading: each led in turn, and a later leader
        # reloads the positions from the database instead of writing the day again.
        assert all("leading" in log for log in logs), logs
        assert sum(" enqueue " in log for log in logs) >= 1
    else:
        assert all(" enqueue " in log or " already " in log for log in logs), logs
    day_end = DAY + timedelta(days=1)
    assert_one_job_per_slot(
        store, "five", [DAY + timedelta(minutes=5 * i) for i in range(24 * 12 + 1)]
    )
    hourly = [DAY + timedelta(hours=h, minutes=7) for h in range(-1, 24)]
    assert_one_job_per_slot(store, "hourly", [s for s in hourly if DAY < s <= day_end])
    assert_one_job_per_slot(store, "nightly", [datetime(2026, 3, 29, 1, 0, tzinfo=UTC)])
    assert store.lease_holder(DEFAULT_LEASE_NAME) is None


@pytest.mark.slow
def test_four_concurrent_enqueue_calls_for_one_slot_make_one_job(
    store: Store, db_url: str, table_prefix: str, registry: Path
) -> None:
    env = env_for(db_url, table_prefix, registry)
    slot = "2026-03-29T03:15:00Z"
    procs = [start(["enqueue", "five", "--slot", slot], env) for _ in range(4)]
    outputs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            outputs.append(out.strip())
    finally:
        stop_all(procs)
    assert sorted(outputs) == ["already enqueued"] * 3 + ["enqueued"]
    jobs = store.list_jobs(kind="five")
    assert [j.scheduled_for for j in jobs] == [datetime(2026, 3, 29, 3, 15, tzinfo=UTC)]


def holder_pid(store: Store) -> int | None:
    found = store.lease_holder(DEFAULT_LEASE_NAME)
    return int(found[0].split(":")[1]) if found else None


@pytest.mark.slow
def test_killing_the_leader_a_standby_takes_over_and_no_slot_is_lost_or_doubled(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """Real time, compressed 60×: a minutely job fires every real second. The leader is killed
    (no lease release); the standby takes over when the 2 s lease expires and carries on."""
    registry = tmp_path / "minutely.toml"
    registry.write_text(
        '[jobs.tick]\ncommand = "true"\nschedule = "* * * * *"\nmode = "scheduler"\n'
        'policy = "backfill"\nmisfire_grace = 900\n'
    )
    env = env_for(db_url, table_prefix, registry)
    args = ["scheduler", "--now", DAY.isoformat(), "--speed", "60", "--lease-ttl", "2"]
    procs = [start(args, env) for _ in range(2)]
    try:
        leader = wait_for(lambda: holder_pid(store), 30, "a leader")
        by_pid = {p.pid: p for p in procs}
        assert leader in by_pid
        wait_for(lambda: len(store.list_jobs(kind="tick")) >= 3, 30, "the leader's first jobs")
        os.killpg(leader, signal.SIGKILL)
        by_pid[leader].wait(timeout=10)
        killed_at = time.monotonic()
        standby = next(pid for pid in by_pid if pid != leader)
        wait_for(lambda: holder_pid(store) == standby, 30, "the standby to take over")
        takeover = time.monotonic() - killed_at
        before = len(store.list_jobs(kind="tick", limit=10_000))
        wait_for(
            lambda: len(store.list_jobs(kind="tick", limit=10_000)) >= before + 3,
            30,
            "the new leader's jobs",
        )
        survivor = by_pid[standby]
        os.killpg(standby, signal.SIGTERM)
        _out, err = survivor.communicate(timeout=30)
        assert survivor.returncode == 0, err
        assert "released" in err
    finally:
        stop_all(procs)
    print(f"takeover after the kill: {takeover:.2f} s (lease TTL 2 s)")
    assert store.lease_holder(DEFAULT_LEASE_NAME) is None  # SIGTERM gave the lease up
    jobs = store.list_jobs(kind="tick", limit=10_000)
    slots = sorted(j.scheduled_for for j in jobs if j.scheduled_for)
    assert len(slots) == len(set(slots)), "a slot was enqueued twice"
    expected = [slots[0] + timedelta(minutes=i) for i in range(len(slots))]
    assert slots == expected, "a slot was lost in the takeover"
    assert all(r["outcome"] == "enqueued" for r in store.runs("tick", limit=10_000))
