"""An outage longer than the lease, with nothing crashed: every job runs once.

Two workers (``--heartbeat 1 --lease 3``) run jobs of about a second; the database goes away
for 8 s while they run — a PostgreSQL server stopped, a MariaDB behind a proxy that is cut
and frozen, PostgreSQL and MariaDB behind a proxy that is only frozen (no connection closed),
a SQLite database whose filesystem is full — then comes back. Jobs that finished
during the outage have outcomes the workers hold in memory, and every lease has expired by
the time the database answers. Nothing may run twice: a held outcome lands (fenced by the
attempt, not the clock), each worker writes what it holds and renews its leases before any
reaper takes one back, and a run the fence stopped (it could not renew in time) runs again but
never completes twice. Each job appends ``start``/``end`` lines to a results file; the test
counts completed runs from it.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrate_cron.store import Store, open_store
from tests.conftest import IN_CI
from tests.faults.fulldisk import CannotMount, fill, small_filesystem
from tests.faults.pgserver import ThrowawayPostgres
from tests.faults.procs import Fleet, Proc, cli_env, wait_for
from tests.faults.proxy import StallingProxy, upstream_of, via_proxy
from tests.faults.test_outages import pg_server, quiet  # noqa: F401  (pg_server: a fixture)

JOBS = 40
JOB_MS = 1000
OUTAGE = 8.0  # seconds the database stays away: longer than the lease
LEASE = 3.0
DRAIN_BOUND = 60.0
WORKER_ARGS = f"worker --concurrency 4 --heartbeat 1 --lease {LEASE:g} --poll 0.2 --grace 5".split()
REGISTRY = '[jobs.slow]\nhandler = "outage_jobs:record"\nmax_attempts = 20\n'
#: Each run appends "start ID PID TIME" before its work and "end ID PID TIME" after it, each
#: line one O_APPEND write (whole or absent).
HANDLER_MODULE = """\
import os
import time


def _line(word, ctx):
    fd = os.open(os.environ["MCT_RESULTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{word} {ctx.job_id} {os.getpid()} {time.time():.3f}\\n".encode())
    finally:
        os.close(fd)


def record(payload, ctx):
    _line("start", ctx)
    time.sleep(payload["ms"] / 1000)
    _line("end", ctx)
"""


@dataclass(frozen=True)
class Run:
    word: str
    job_id: int
    pid: int
    at: float


def read_runs(path: Path) -> list[Run]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        word, job_id, pid, at = line.split()
        out.append(Run(word, int(job_id), int(pid), float(at)))
    return out


@dataclass
class Outage:
    """How the database goes away (``begin``) and comes back (``end``) for one backend."""

    begin: Callable[[], None]
    end: Callable[[], None]


def outage_lengths(long: float) -> pytest.MarkDecorator:
    """``OUTAGE`` seconds in CI; with ``--chaos-long`` also the reporter's ``long`` (issue
    #30: a 45 s PostgreSQL outage, 30 s of a full SQLite disk)."""
    return pytest.mark.parametrize(
        "seconds",
        [OUTAGE, pytest.param(long, marks=pytest.mark.chaos_long, id=f"long-{long:g}s")],
        ids=lambda v: f"{v:g}s",
    )


def run_outage(
    store: Store, worker_url: str, prefix: str, tmp_path: Path, outage: Outage, seconds: float
) -> None:
    """The scenario of the module docstring; ``store`` is the test's own way in (never cut)."""
    store.create_schema()
    project = tmp_path / "project"
    project.mkdir()
    (project / "outage_jobs.py").write_text(HANDLER_MODULE)
    registry = project / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    results = tmp_path / "results.txt"
    store.enqueue_many("slow", [{"ms": JOB_MS}] * JOBS, max_attempts=20)
    env = cli_env(worker_url, prefix, registry, MCT_RESULTS=str(results))
    with Fleet(tmp_path) as fleet:
        workers = [fleet.start(WORKER_ARGS, env, label="worker", cwd=project) for _ in range(2)]

        def running() -> int:
            runs = read_runs(results)
            return sum(r.word == "start" for r in runs) - sum(r.word == "end" for r in runs)

        # The outage begins while both workers run jobs (their outcomes will be held).
        wait_for(
            lambda: (
                all(any(r.pid == w.pid for r in read_runs(results)) for w in workers)
                and running() >= 6
            ),
            60,
            "both workers to run jobs",
            interval=0.02,
        )
        ends_before = sum(r.word == "end" for r in read_runs(results))
        down_at = time.monotonic()
        outage.begin()
        for w in workers:
            wait_for(
                lambda w=w: "db-unavailable" in w.output(), 30, f"worker {w.pid} to see the outage"
            )
        time.sleep(max(0.0, seconds - (time.monotonic() - down_at)))  # the outage itself
        held = sum(r.word == "end" for r in read_runs(results)) - ends_before
        assert held > 0, "no job finished during the outage: no outcome was held"
        outage.end()
        up_at, up_wall = time.monotonic(), time.time()
        print(f"\ndatabase away {up_at - down_at:.1f}s")
        wait_for(
            lambda: quiet(lambda: store.count_jobs(states=["open", "running"])) == 0,
            DRAIN_BOUND,
            "the queue to drain:\n" + "\n".join(w.output()[-2000:] for w in workers),
            interval=0.1,
        )
        drained = time.monotonic() - up_at
        for w in workers:
            w.signal(signal.SIGTERM)
        for w in workers:
            assert w.wait(30) == 0, w.output()[-3000:]
    report(store, workers, results, held, up_wall, drained)


def report(
    store: Store, workers: list[Proc], results: Path, held: int, up_wall: float, drained: float
) -> None:
    runs = read_runs(results)
    ends = Counter(r.job_id for r in runs if r.word == "end")
    starts = Counter(r.job_id for r in runs if r.word == "start")
    twice = {job_id: n for job_id, n in ends.items() if n > 1}
    ids = {j.id for j in store.list_jobs(kind="slow", limit=10_000)}
    after = [
        min((r.at for r in runs if r.pid == w.pid and r.at >= up_wall), default=None)
        for w in workers
    ]
    recovery = max((a - up_wall for a in after if a is not None), default=float("nan"))
    print(
        f"\n{store.family}: jobs {len(ids)}, held outcomes {held}, lost {len(ids - set(ends))}, "
        f"run twice {sum(n - 1 for n in twice.values())}, "
        f"left running {store.count_jobs(states=['running'])}, "
        f"runs cut by the fence and run again {sum(starts.values()) - sum(ends.values())}, "
        f"work again {recovery:.1f}s after the database, queue drained {drained:.1f}s after"
    )
    assert len(ids) == JOBS
    assert not twice, f"jobs that ran to the end more than once: {twice}"
    assert set(ends) == ids, "a job never ran to the end"
    assert store.count_jobs(states=["done"]) == JOBS
    for w in workers:
        out = w.output()
        assert "Traceback" not in out, out[-3000:]
        assert "outcome-dropped" not in out, out[-3000:]


@pytest.mark.slow
@outage_lengths(45.0)
def test_postgresql_outage_longer_than_the_lease_runs_each_job_once(
    pg_server: ThrowawayPostgres,  # noqa: F811
    table_prefix: str,
    tmp_path: Path,
    seconds: float,
) -> None:
    store = open_store(pg_server.url, prefix=table_prefix)
    try:
        run_outage(
            store,
            pg_server.url,
            table_prefix,
            tmp_path,
            Outage(lambda: pg_server.stop("fast"), pg_server.start),
            seconds,
        )
    finally:
        store.dispose()


@pytest.mark.slow
@outage_lengths(45.0)
def test_mariadb_outage_longer_than_the_lease_runs_each_job_once(
    mariadb_database: str, table_prefix: str, tmp_path: Path, seconds: float
) -> None:
    """The workers reach MariaDB through a proxy that cuts their connections and then relays
    nothing (new connections hang) for the outage."""
    store = open_store(mariadb_database, prefix=table_prefix)
    try:
        with StallingProxy(*upstream_of(mariadb_database)) as proxy:

            def begin() -> None:
                proxy.freeze()
                proxy.cut()

            run_outage(
                store,
                via_proxy(mariadb_database, proxy),
                table_prefix,
                tmp_path,
                Outage(begin, proxy.thaw),
                seconds,
            )
    finally:
        with contextlib.suppress(Exception):
            store.drop_schema()
        store.dispose()


@pytest.mark.slow
@outage_lengths(60.0)
def test_a_frozen_database_longer_than_the_lease_runs_each_job_once(
    server_url: str, table_prefix: str, tmp_path: Path, seconds: float
) -> None:
    """A freeze: the proxy relays nothing either way and new connections hang, but no
    connection is closed (a stopped VM, a partition that keeps the TCP sessions) — the
    workers' calls wait on open sockets until their time limits (issue #30 reported a 60 s
    freeze; ``--chaos-long`` repeats it)."""
    store = open_store(server_url, prefix=table_prefix)
    try:
        with StallingProxy(*upstream_of(server_url)) as proxy:
            run_outage(
                store,
                via_proxy(server_url, proxy),
                table_prefix,
                tmp_path,
                Outage(proxy.freeze, proxy.thaw),
                seconds,
            )
    finally:
        with contextlib.suppress(Exception):
            store.drop_schema()
        store.dispose()


@pytest.fixture
def full_disk_dir() -> Iterator[Path]:
    try:
        with small_filesystem(32) as root:
            yield root
    except CannotMount as exc:
        if IN_CI:
            pytest.fail(f"CI requires a tmpfs for the full-disk test: {exc}", pytrace=False)
        pytest.skip(f"cannot mount a tmpfs here: {exc}")


def _truncate_wal(db: Path) -> None:
    """Checkpoint the database and cut its write-ahead log to zero bytes, so that the next
    write must grow the log (SQLite reuses a log's space after a checkpoint)."""
    con = sqlite3.connect(db, timeout=10)
    try:
        wait_for(
            lambda: con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0,
            20,
            "a checkpoint that truncates the write-ahead log",
        )
    finally:
        con.close()


@pytest.mark.slow
@outage_lengths(30.0)
def test_sqlite_full_disk_longer_than_the_lease_runs_each_job_once(
    full_disk_dir: Path, table_prefix: str, tmp_path: Path, seconds: float
) -> None:
    db = full_disk_dir / "queue.db"
    url = f"sqlite:///{db}"
    store = open_store(url, prefix=table_prefix)
    ballast: list[Path] = []

    def begin() -> None:
        _truncate_wal(db)
        ballast.append(fill(full_disk_dir))

    def end() -> None:
        ballast.pop().unlink()

    try:
        run_outage(store, url, table_prefix, tmp_path, Outage(begin, end), seconds)
    finally:
        store.dispose()
