"""migrate-cron next to its peers on one PostgreSQL: PgQueuer, Procrastinate and a raw
``FOR UPDATE SKIP LOCKED`` loop (the ceiling), in interleaved rounds (``make bench-peers``).

Per round, for every figure, each system runs once, one after the other, on a fresh database
(created and dropped here), so every system of a round sees about the same machine load; the
report gives the median and min–max over rounds and, per round, migrate-cron's ratio to each
peer. Figures:

- processing no-op jobs with 1 and 2 worker processes: migrate-cron's installed ``migrate-cron
  worker`` with its defaults and tuned (``--concurrency 1 --batch 100``); PgQueuer's ``pgq run``
  (``--mode drain``, its default batch of 10) with its asyncpg and psycopg drivers;
  Procrastinate's ``procrastinate worker --one-shot`` (its defaults; fewer jobs, it is slow);
  the raw loop claiming N = 10 and N = 100 per statement (claim and finish: two transactions
  per batch, as a worker that commits its claim before running needs);
- enqueue one by one (``Store.enqueue`` / PgQueuer ``enqueue`` / Procrastinate ``defer``) and
  1,000 per call (``Store.enqueue_many`` / PgQueuer's list ``enqueue`` / ``batch_defer``),
  each in a process of its own, with that process's CPU time per job; one by one again with
  ``synchronous_commit = off`` on the throwaway database, a diagnostic that takes the WAL flush
  every durable commit waits for out of the figure (what is left is the producer's own cost);
  beside them the ceiling, a raw durable insert (asyncpg, a prepared one-column INSERT into a
  table with only its primary key, autocommit): no producer's call can cost less;
- pickup latency p50/p90: an idle worker with its defaults, one job enqueued at a time; from
  the enqueue call to the handler's first line.

Processing rates: migrate-cron as bench/bench_worker.py measures them (first ``started_at`` to
last ``finished_at`` in the table, process start-up not counted); the peers and the raw loop,
from their first handler call to their last (every process writes its first and last time).
``--baseline PATH`` also measures the enqueue figures with the migrate-cron package found at
PATH (say a worktree of main), for before/after in the same run. Writes "## peers" in
docs/benchmarks.md.

    python bench/bench_peers.py [--jobs 10000] [--rounds 3] [--enqueue-calls 2000]
                                [--bulk-batches 10] [--samples 40] [--baseline PATH]
                                [--only process,enqueue,latency] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchdoc import replace_section

ROOT = Path(__file__).resolve().parent.parent
PG = os.environ.get("MIGRATE_CRON_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BIN = Path(sys.executable).parent
PREFIX = "bp_"
BULK = 1000

# The handlers of every system, written to a temporary module that each worker imports. Each
# process records its first and last handler call (and latency samples) in STAMPS_DIR at exit.
JOBS_MODULE = """
import atexit, contextlib, json, os, time

_first, _last, _count, _lat = [None], [None], [0], []


def _seen(start, end):
    if _first[0] is None:
        _first[0] = start
    _last[0] = end
    _count[0] += 1


@atexit.register
def _dump():
    if _count[0] or _lat:
        path = os.path.join(os.environ["STAMPS_DIR"], f"{os.getpid()}.json")
        with open(path, "w") as fh:
            json.dump({"first": _first[0], "last": _last[0], "count": _count[0], "lat": _lat}, fh)


def _latency(sent):
    _lat.append(time.time() - sent)
    with open(os.path.join(os.environ["STAMPS_DIR"], f"lat-{os.getpid()}.txt"), "a") as fh:
        fh.write(f"{_lat[-1]}\\n")


# migrate-cron
if os.environ.get("BENCH_SYSTEM") == "mc":
    from migrate_cron.handlers import handler

    @handler("noop")
    def mc_noop(payload, ctx):
        return None

    @handler("lat")
    def mc_lat(payload, ctx):
        _latency(payload["t"])


# PgQueuer: factories for `pgqueuer.run("bench_peers_jobs:pgq_asyncpg")` (what `pgq run` runs);
# 1.6 wants an async context manager that yields the PgQueuer.
def _pgq(driver):
    from pgqueuer import PgQueuer

    pgq = PgQueuer(driver)

    @pgq.entrypoint("noop")
    async def noop(job):
        t = time.time()
        _seen(t, t)

    @pgq.entrypoint("lat")
    async def lat(job):
        _latency(json.loads(job.payload)["t"])

    return pgq


@contextlib.asynccontextmanager
async def pgq_asyncpg():
    import asyncpg
    from pgqueuer.db import AsyncpgDriver

    conn = await asyncpg.connect(os.environ["BENCH_DSN"])
    try:
        yield _pgq(AsyncpgDriver(conn))
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def pgq_psycopg():
    import psycopg
    from pgqueuer.db import PsycopgDriver

    conn = await psycopg.AsyncConnection.connect(os.environ["BENCH_DSN"], autocommit=True)
    try:
        yield _pgq(PsycopgDriver(conn))
    finally:
        await conn.close()


# Procrastinate: `procrastinate --app bench_peers_jobs.app worker --one-shot`
if os.environ.get("BENCH_SYSTEM") == "procrastinate":
    import procrastinate

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=os.environ["BENCH_DSN"])
    )

    @app.task(name="noop")
    async def noop():
        t = time.time()
        _seen(t, t)

    @app.task(name="lat")
    async def lat(t):
        _latency(t)
"""


# ---------------------------------------------------------------------------- plumbing
def libpq(url: str) -> str:
    """The SQLAlchemy URL as a libpq DSN (for psycopg, asyncpg and the peers)."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def database() -> Iterator[str]:
    """A throwaway PostgreSQL database; its SQLAlchemy URL."""
    import psycopg

    base = libpq(PG)
    name = f"bp_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield PG.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            admin.execute(f"DROP DATABASE IF EXISTS {name}")


def env_for(system: str, url: str, stamps: Path, work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        BENCH_SYSTEM=system,
        BENCH_DSN=libpq(url),
        STAMPS_DIR=str(stamps),
        PYTHONPATH=str(work),
    )
    env.pop("MIGRATE_CRON_DEBUG", None)
    return env


def run(cmd: list[str], env: dict[str, str], work: Path, timeout: float = 900) -> str:
    res = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}… exited {res.returncode}: {res.stderr[-2000:]}")
    return res.stdout


def run_all(cmds: list[list[str]], env: dict[str, str], work: Path, timeout: float = 900) -> None:
    """Start ``cmds`` together and wait for all (worker processes of one figure)."""
    procs = []
    for i, cmd in enumerate(cmds):
        with open(work / f"proc-{i}.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    cmd, env=env, cwd=work, stdout=log, stderr=log, start_new_session=True
                )
            )
    try:
        for i, proc in enumerate(procs):
            if proc.wait(timeout) != 0:
                tail = (work / f"proc-{i}.log").read_text()[-2000:]
                raise RuntimeError(f"{cmds[i][0]} exited {proc.returncode}: {tail}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def stamped_rate(stamps: Path, jobs: int) -> float:
    """Jobs/s from the first handler call to the last over every process's stamps."""
    rows = [json.loads(p.read_text()) for p in stamps.glob("*.json")]
    count = sum(r["count"] for r in rows)
    if count != jobs:
        raise RuntimeError(f"{count} of {jobs} jobs ran")
    first = min(r["first"] for r in rows if r["first"] is not None)
    last = max(r["last"] for r in rows if r["last"] is not None)
    return jobs / (last - first)


def fresh_stamps(work: Path) -> Path:
    stamps = work / f"stamps-{uuid.uuid4().hex[:6]}"
    stamps.mkdir()
    return stamps


# ---------------------------------------------------------------------------- schemas, loads
def mc_store(url: str) -> Any:
    from migrate_cron.store import open_store

    store = open_store(url, prefix=PREFIX)
    store.create_schema()
    return store


def pgq_install(url: str, work: Path) -> None:
    run([str(BIN / "pgq"), "--pg-dsn", libpq(url), "install"], dict(os.environ), work)


def procrastinate_install(url: str, env: dict[str, str], work: Path) -> None:
    run(
        [str(BIN / "procrastinate"), "--app", "bench_peers_jobs.app", "schema", "--apply"],
        env,
        work,
    )


def pgq_load(url: str, jobs: int) -> None:
    import psycopg
    from pgqueuer.adapters.drivers.psycopg import SyncPsycopgDriver
    from pgqueuer.queries import SyncQueries

    with psycopg.connect(libpq(url), autocommit=True) as conn:
        queries = SyncQueries(SyncPsycopgDriver(conn))
        for i in range(0, jobs, BULK):
            n = min(BULK, jobs - i)
            queries.enqueue(["noop"] * n, [None] * n, [0] * n)


def analyze(url: str, table: str) -> None:
    """Statistics as autovacuum would have them on a live queue."""
    import psycopg

    with psycopg.connect(libpq(url), autocommit=True) as conn:
        conn.execute(f"ANALYZE {table}")


# ---------------------------------------------------------------------------- processing
def process_mc(flags: list[str], processes: int, jobs: int, work: Path) -> float:
    from sqlalchemy import text

    with database() as url:
        store = mc_store(url)
        try:
            store.enqueue_many("noop", [None] * jobs)
            analyze(url, f"{PREFIX}job")
            env = env_for("mc", url, fresh_stamps(work), work)
            cmd = [str(BIN / "migrate-cron"), "worker", "--database-url", url, "--table-prefix"]
            cmd += [PREFIX, "--once", "--import", "bench_peers_jobs", *flags]
            run_all([cmd] * processes, env, work)
            with store.engine.connect() as conn:
                count, first, last = conn.execute(
                    text(
                        f"SELECT count(*), min(started_at), max(finished_at) FROM {PREFIX}job "
                        "WHERE state = 'done'"
                    )
                ).one()
            if count != jobs:
                raise RuntimeError(f"migrate-cron: {count} of {jobs} jobs done")
            return float(jobs / (last - first).total_seconds())
        finally:
            store.dispose()


def pgq_run(factory: str, drain: bool) -> list[str]:
    """PgQueuer's worker: ``pgqueuer.run``, what ``pgq run`` calls without its CLI (``pgq run``
    1.6.0 fails at start-up with the Typer this project installs, in its log set-up)."""
    mode = "drain" if drain else "continuous"
    code = (
        "import asyncio, pgqueuer\n"
        "from pgqueuer.domain.types import QueueExecutionMode\n"
        f"asyncio.run(pgqueuer.run('bench_peers_jobs:{factory}', "
        f"mode=QueueExecutionMode.{mode}))\n"
    )
    return [sys.executable, "-c", code]


def process_pgq(driver: str, processes: int, jobs: int, work: Path) -> float:
    with database() as url:
        pgq_install(url, work)
        pgq_load(url, jobs)
        analyze(url, "pgqueuer")
        stamps = fresh_stamps(work)
        env = env_for("pgq", url, stamps, work)
        cmd = pgq_run(f"pgq_{driver}", drain=True)
        run_all([cmd] * processes, env, work)
        return stamped_rate(stamps, jobs)


def process_procrastinate(processes: int, jobs: int, work: Path) -> float:
    with database() as url:
        stamps = fresh_stamps(work)
        env = env_for("procrastinate", url, stamps, work)
        procrastinate_install(url, env, work)
        load = (
            "import bench_peers_jobs as m\n"
            "with m.app.open():\n"
            f"    for i in range(0, {jobs}, {BULK}):\n"
            f"        m.noop.batch_defer(*[{{}}] * min({BULK}, {jobs} - i))\n"
        )
        run([sys.executable, "-c", load], env, work)
        analyze(url, "procrastinate_jobs")
        cmd = [str(BIN / "procrastinate"), "--app", "bench_peers_jobs.app", "worker"]
        cmd += ["--one-shot"]
        run_all([cmd] * processes, env, work)
        return stamped_rate(stamps, jobs)


RAW_TABLE = """CREATE TABLE raw_job (
  id bigserial PRIMARY KEY, payload jsonb, state text NOT NULL DEFAULT 'open',
  locked_by text, started_at timestamptz, finished_at timestamptz,
  run_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX raw_job_ready ON raw_job (run_at, id) WHERE state = 'open'"""


def raw_worker(dsn: str, n: int) -> None:
    """The ceiling: claim N (SKIP LOCKED, one statement, committed), run nothing, mark them
    done (one statement, committed); until the queue is empty. Child process entry."""
    import psycopg

    me = f"raw-{os.getpid()}"
    claim = (
        "UPDATE raw_job SET state = 'running', locked_by = %s, started_at = now() "
        "WHERE id IN (SELECT id FROM raw_job WHERE state = 'open' AND run_at <= now() "
        "ORDER BY run_at, id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id, payload"
    )
    done = (
        "UPDATE raw_job SET state = 'done', finished_at = now() "
        "WHERE id = ANY(%s) AND locked_by = %s AND state = 'running'"
    )
    first = last = None
    count = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            rows = conn.execute(claim, (me, n)).fetchall()
            if not rows:
                break
            if first is None:
                first = time.time()
            conn.execute(done, ([r[0] for r in rows], me))
            last = time.time()
            count += len(rows)
    path = Path(os.environ["STAMPS_DIR"]) / f"{os.getpid()}.json"
    path.write_text(json.dumps({"first": first, "last": last, "count": count, "lat": []}))


def process_raw(n: int, processes: int, jobs: int, work: Path) -> float:
    import psycopg

    with database() as url:
        with psycopg.connect(libpq(url), autocommit=True) as conn:
            for stmt in RAW_TABLE.split(";"):
                conn.execute(stmt)
            conn.execute(
                "INSERT INTO raw_job (payload) SELECT 'null'::jsonb FROM generate_series(1, %s)",
                (jobs,),
            )
        analyze(url, "raw_job")
        stamps = fresh_stamps(work)
        env = env_for("raw", url, stamps, work)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child-raw", str(n), libpq(url)]
        run_all([cmd] * processes, env, work)
        return stamped_rate(stamps, jobs)


# ---------------------------------------------------------------------------- enqueue
ENQUEUE_CHILD = {
    # migrate-cron's Python API; {path} first on sys.path (the branch, or --baseline).
    "mc": """
import sys, time
sys.path.insert(0, {path!r})
import migrate_cron
from migrate_cron.store import open_store
store = open_store({url!r}, prefix={prefix!r})
store.enqueue("warm", None)
t, c = time.perf_counter(), time.process_time()
if {bulk}:
    for _ in range({n}):
        store.enqueue_many("noop", [{{"i": i}} for i in range({size})])
else:
    for i in range({n}):
        store.enqueue("noop", {{"i": i}})
print(time.perf_counter() - t, time.process_time() - c, migrate_cron.__file__)
""",
    # PgQueuer's synchronous producer (SyncQueries over a psycopg autocommit connection).
    "pgq_psycopg": """
import json, time, psycopg
from pgqueuer.adapters.drivers.psycopg import SyncPsycopgDriver
from pgqueuer.queries import SyncQueries
conn = psycopg.connect({dsn!r}, autocommit=True)
q = SyncQueries(SyncPsycopgDriver(conn))
q.enqueue("warm", None)
t, c = time.perf_counter(), time.process_time()
if {bulk}:
    for _ in range({n}):
        q.enqueue(["noop"] * {size}, [json.dumps({{"i": i}}).encode() for i in range({size})],
                  [0] * {size})
else:
    for i in range({n}):
        q.enqueue("noop", json.dumps({{"i": i}}).encode())
print(time.perf_counter() - t, time.process_time() - c, "-")
""",
    # PgQueuer's README producer: Queries over an asyncpg connection.
    "pgq_asyncpg": """
import asyncio, json, time, asyncpg
from pgqueuer.db import AsyncpgDriver
from pgqueuer.queries import Queries
async def main():
    q = Queries(AsyncpgDriver(await asyncpg.connect({dsn!r})))
    await q.enqueue("warm", None)
    t, c = time.perf_counter(), time.process_time()
    if {bulk}:
        for _ in range({n}):
            await q.enqueue(["noop"] * {size},
                            [json.dumps({{"i": i}}).encode() for i in range({size})],
                            [0] * {size})
    else:
        for i in range({n}):
            await q.enqueue("noop", json.dumps({{"i": i}}).encode())
    print(time.perf_counter() - t, time.process_time() - c, "-")
asyncio.run(main())
""",
    # The ceiling of one-by-one: the least a durable enqueue can cost from Python — asyncpg, a
    # prepared one-column INSERT … RETURNING id into a table with only its primary key, in
    # autocommit (one round trip, one commit that waits for the WAL flush). No queue does less
    # per call; a queue's own columns, indexes and wake-up come on top. Batched: unnest.
    "raw": """
import asyncio, time, asyncpg
async def main():
    c = await asyncpg.connect({dsn!r})
    await c.execute("CREATE TABLE raw_enqueue (id bigserial PRIMARY KEY, x int)")
    one = await c.prepare("INSERT INTO raw_enqueue (x) VALUES ($1) RETURNING id")
    many = await c.prepare("INSERT INTO raw_enqueue (x) SELECT unnest($1::int[])")
    await one.fetchval(0)
    t, c0 = time.perf_counter(), time.process_time()
    if {bulk}:
        for _ in range({n}):
            await many.fetch(list(range({size})))
    else:
        for i in range({n}):
            await one.fetchval(i)
    print(time.perf_counter() - t, time.process_time() - c0, "-")
asyncio.run(main())
""",
    # Procrastinate's synchronous defer / batch_defer from an opened app.
    "procrastinate": """
import time
import bench_peers_jobs as m
with m.app.open():
    m.noop.defer()
    t, c = time.perf_counter(), time.process_time()
    if {bulk}:
        for _ in range({n}):
            m.noop.batch_defer(*[{{}}] * {size})
    else:
        for _ in range({n}):
            m.noop.defer()
    print(time.perf_counter() - t, time.process_time() - c, "-")
""",
}


def enqueue_rate(
    system: str, bulk: bool, n: int, work: Path, path: str = "", no_flush: bool = False
) -> dict[str, float]:
    """Jobs/s of ``n`` calls (bulk: of ``n`` calls of 1,000 jobs) in a process of its own, and
    that process's CPU time per job (µs). ``no_flush``: the throwaway database gets
    ``synchronous_commit = off`` (a diagnostic: a commit then does not wait for the WAL to
    reach the disk, which shows what a call costs besides that wait)."""
    kind = "mc" if system.startswith("mc") else system
    with database() as url:
        if no_flush:
            import psycopg

            name = url.rsplit("/", 1)[1]
            with psycopg.connect(libpq(PG), autocommit=True) as admin:
                admin.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
        env = env_for(kind, url, fresh_stamps(work), work)
        if kind == "mc":
            mc_store(url).dispose()
        elif kind == "raw":
            pass  # the child makes its table
        elif kind.startswith("pgq"):
            pgq_install(url, work)
        else:
            procrastinate_install(url, env, work)
        code = ENQUEUE_CHILD[kind].format(
            path=path or str(ROOT), url=url, dsn=libpq(url), prefix=PREFIX, bulk=bulk, n=n,
            size=BULK,
        )  # fmt: skip
        wall, cpu, where = run([sys.executable, "-c", code], env, work).split(" ", 2)
        if kind == "mc" and path and not where.strip().startswith(path):
            raise RuntimeError(f"--baseline: imported {where.strip()}, not from {path}")
        jobs = n * (BULK if bulk else 1)
        return {"rate": jobs / float(wall), "cpu_us": float(cpu) / jobs * 1e6}


# ---------------------------------------------------------------------------- latency
def latency(system: str, samples: int, work: Path) -> tuple[float, float]:
    """(p50, p90) ms from the enqueue call to the handler's first line, idle worker, defaults."""
    with database() as url:
        stamps = fresh_stamps(work)
        env = env_for("procrastinate" if system == "procrastinate" else system, url, stamps, work)
        if system == "mc":
            store = mc_store(url)
            cmd = [str(BIN / "migrate-cron"), "worker", "--database-url", url, "--table-prefix"]
            cmd += [PREFIX, "--import", "bench_peers_jobs"]
        elif system.startswith("pgq"):
            pgq_install(url, work)
            cmd = pgq_run(system, drain=False)
        else:
            procrastinate_install(url, env, work)
            cmd = [str(BIN / "procrastinate"), "--app", "bench_peers_jobs.app", "worker"]
        with open(work / "latency.log", "w") as log:
            proc = subprocess.Popen(
                cmd, env=env, cwd=work, stdout=log, stderr=log, start_new_session=True
            )
        try:
            send = producer(system, url, env)
            time.sleep(3.0)  # started and idle on its LISTEN
            for _ in range(samples):
                send(time.time())
                time.sleep(0.05)
            deadline = time.monotonic() + 60
            while len(read_latencies(stamps)) < samples:
                if time.monotonic() > deadline or proc.poll() is not None:
                    log_tail = (work / "latency.log").read_text()[-2000:]
                    raise RuntimeError(f"{system}: latency jobs did not all run: {log_tail}")
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            close = getattr(send, "close", None)
            if close is not None:
                close()
            if system == "mc":
                store.dispose()
        ms = sorted(v * 1000 for v in read_latencies(stamps))
        return statistics.median(ms), statistics.quantiles(ms, n=10)[-1]


def read_latencies(stamps: Path) -> list[float]:
    return [float(v) for p in stamps.glob("lat-*.txt") for v in p.read_text().split()]


class _Producer:
    """One enqueue per call, each system through its own producer API, connected once."""

    def __init__(self, system: str, url: str, env: dict[str, str]) -> None:
        self.system = system
        if system == "mc":
            from migrate_cron.store import open_store

            self.store = open_store(url, prefix=PREFIX)
        elif system.startswith("pgq"):
            import psycopg
            from pgqueuer.adapters.drivers.psycopg import SyncPsycopgDriver
            from pgqueuer.queries import SyncQueries

            self.conn = psycopg.connect(libpq(url), autocommit=True)
            self.queries = SyncQueries(SyncPsycopgDriver(self.conn))
        else:
            os.environ.update(BENCH_SYSTEM="procrastinate", BENCH_DSN=env["BENCH_DSN"])
            sys.path.insert(0, env["PYTHONPATH"])
            import importlib

            module = importlib.import_module("bench_peers_jobs")
            module = importlib.reload(module)  # a fresh app for this database
            self.module = module
            self.opened = module.app.open()

    def __call__(self, sent: float) -> None:
        if self.system == "mc":
            self.store.enqueue("lat", {"t": sent})
        elif self.system.startswith("pgq"):
            self.queries.enqueue("lat", json.dumps({"t": sent}).encode())
        else:
            self.module.lat.defer(t=sent)

    def close(self) -> None:
        if self.system == "mc":
            self.store.dispose()
        elif self.system.startswith("pgq"):
            self.conn.close()
        else:
            self.opened.close()


def producer(system: str, url: str, env: dict[str, str]) -> Callable[[float], None]:
    return _Producer(system, url, env)


# ---------------------------------------------------------------------------- report
PROCESS_1 = {
    "mc defaults": lambda a, w: process_mc([], 1, a.jobs, w),
    "mc tuned": lambda a, w: process_mc(["--concurrency", "1", "--batch", "100"], 1, a.jobs, w),
    "PgQueuer psycopg": lambda a, w: process_pgq("psycopg", 1, a.jobs, w),
    "PgQueuer asyncpg": lambda a, w: process_pgq("asyncpg", 1, a.jobs, w),
    "Procrastinate": lambda a, w: process_procrastinate(1, a.slow_jobs, w),
    "raw N=10": lambda a, w: process_raw(10, 1, a.jobs, w),
    "raw N=100": lambda a, w: process_raw(100, 1, a.jobs, w),
}
PROCESS_2 = {
    "mc defaults": lambda a, w: process_mc([], 2, a.jobs, w),
    "mc tuned": lambda a, w: process_mc(["--concurrency", "1", "--batch", "100"], 2, a.jobs, w),
    "PgQueuer psycopg": lambda a, w: process_pgq("psycopg", 2, a.jobs, w),
    "PgQueuer asyncpg": lambda a, w: process_pgq("asyncpg", 2, a.jobs, w),
    "raw N=10": lambda a, w: process_raw(10, 2, a.jobs, w),
    "raw N=100": lambda a, w: process_raw(100, 2, a.jobs, w),
}


Figure = Callable[[Any, Path], "float | dict[str, float]"]


def enqueue_figures(single: bool, baseline: str, no_flush: bool = False) -> dict[str, Figure]:
    bulk = not single

    def calls(a: Any) -> int:
        return int(a.enqueue_calls if single else a.bulk_batches)

    def figure(system: str, path: str = "") -> Figure:
        return lambda a, w: enqueue_rate(system, bulk, calls(a), w, path, no_flush)

    figures = {
        "mc": figure("mc"),
        "PgQueuer psycopg": figure("pgq_psycopg"),
        "PgQueuer asyncpg": figure("pgq_asyncpg"),
        "Procrastinate": figure("procrastinate"),
        "raw durable insert": figure("raw"),
    }
    if baseline:
        figures["mc baseline"] = figure("mc", baseline)
    return figures


LATENCY_NAMES = {
    "mc": "mc",
    "pgq_asyncpg": "PgQueuer asyncpg",
    "pgq_psycopg": "PgQueuer psycopg",
    "procrastinate": "Procrastinate",
}


def pretty(name: str) -> str:
    """``mc …`` as migrate-cron in the tables."""
    if name == "mc baseline":
        return "migrate-cron at `--baseline`"
    return "migrate-cron" + name[2:] if name.startswith("mc") else name


def fmt(values: list[float], unit: str = "") -> str:
    if not values:
        return "—"
    med = statistics.median(values)
    return f"{med:,.0f}{unit} ({min(values):,.0f}–{max(values):,.0f})"


def ratios(rounds: list[dict[str, float]], num: str, den: str) -> str:
    per = [r[num] / r[den] for r in rounds if num in r and den in r and r[den]]
    return " / ".join(f"{v:.2f}×" for v in per) if per else "—"


def versions() -> str:
    names = ("pgqueuer", "procrastinate", "asyncpg", "psycopg", "SQLAlchemy")
    return ", ".join(f"{n} {metadata.version(n)}" for n in names)


def server_version() -> str:
    import psycopg

    with psycopg.connect(libpq(PG)) as conn:
        return str(conn.execute("SHOW server_version").fetchone()[0]).split(" ")[0]  # type: ignore[index]


def machine() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next(
        (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")),
        "unknown CPU",
    )
    return f"{model}, {os.cpu_count()} CPUs"


def report(results: dict[str, list[dict[str, float]]], args: Any, loads: list[float]) -> str:
    cmd = "make bench-peers" + (
        f" (python bench/bench_peers.py {' '.join(sys.argv[1:])})" if sys.argv[1:] else ""
    )
    lines = [
        "## peers",
        "",
        f"`{cmd}` on {datetime.now(UTC):%Y-%m-%d}: {machine()}, PostgreSQL {server_version()} "
        f"on the same machine, {versions()}. 1-minute load average "
        f"{min(loads):.1f}–{max(loads):.1f} while measuring (2 cores; other work on the machine "
        "moves absolute numbers between rounds: read the ratios, taken within one round). "
        f"{args.rounds} interleaved rounds; each cell is the median "
        "(min–max) over rounds, each ratio is listed per round. How each figure is taken: "
        "bench/bench_peers.py's docstring.",
        "",
    ]
    for key, title, unit in (
        ("process_1", f"Processing {args.jobs:,} no-op jobs, 1 worker process", " jobs/s"),
        ("process_2", f"Processing {args.jobs:,} no-op jobs, 2 worker processes", " jobs/s"),
        ("enqueue_single", f"Enqueue one by one ({args.enqueue_calls:,} calls)", " jobs/s"),
        ("enqueue_bulk", f"Enqueue 1,000 per call ({args.bulk_batches} calls)", " jobs/s"),
        (
            "enqueue_single_no_flush",
            f"Enqueue one by one ({args.enqueue_calls:,} calls), diagnostic: "
            "`synchronous_commit = off` on the throwaway database (no wait for the disk)",
            " jobs/s",
        ),
    ):
        rounds = results.get(key)
        if not rounds:
            continue
        names = list(rounds[0])
        cpus = results.get(f"{key}_cpu") or []
        head = "| system | rate | client CPU per job |" if cpus else "| system | rate |"
        lines += [f"### {title}", "", head, "|---|---:|---:|" if cpus else "|---|---:|"]
        for name in names:
            label = pretty(name)
            if name == "Procrastinate" and key.startswith("process"):
                label += f" ({args.slow_jobs:,} jobs)"
            row = f"| {label} | {fmt([r[name] for r in rounds if name in r], unit)} |"
            if cpus:
                row += f" {fmt([r[name] for r in cpus if name in r], ' µs')} |"
            lines.append(row)
        lines += ["", "| ratio (per round) | |", "|---|---|"]
        pairs = (
            [
                ("mc defaults", "mc tuned"),
                ("mc defaults", "raw N=100"),  # issue 34's targets are on the defaults
                ("mc defaults", "PgQueuer asyncpg"),
                ("mc tuned", "raw N=100"),
                ("mc defaults", "PgQueuer psycopg"),
                ("mc tuned", "PgQueuer psycopg"),
                ("mc tuned", "PgQueuer asyncpg"),
            ]
            if key.startswith("process")
            else [
                ("mc", "PgQueuer psycopg"),
                ("mc", "PgQueuer asyncpg"),
                ("mc", "Procrastinate"),
                ("mc", "raw durable insert"),
                # The ceiling next to the peer: what no client can exceed (issue 34's 1.5 ×).
                ("raw durable insert", "PgQueuer asyncpg"),
                ("mc baseline", "PgQueuer psycopg"),
                ("mc", "mc baseline"),
            ]
        )
        for num, den in pairs:
            got = ratios(rounds, num, den)
            if got != "—":
                lines.append(f"| {pretty(num)} / {pretty(den)} | {got} |")
        lines.append("")
    if results.get("latency"):
        rounds = results["latency"]
        lines += [
            f"### Pickup latency ({args.samples} jobs one at a time, 50 ms apart, idle worker "
            "with its defaults; from the enqueue call to the handler's first line)",
            "",
            "| system | p50 | p90 |",
            "|---|---:|---:|",
        ]
        for name in rounds[0]:
            if name.endswith(" p50"):
                base = name[: -len(" p50")]
                p50 = fmt([r[name] for r in rounds], " ms")
                p90 = fmt([r[f"{base} p90"] for r in rounds], " ms")
                lines.append(f"| {pretty(base)} | {p50} | {p90} |")
        lines.append("")
    return "\n".join(lines)


def write_section(section: str) -> None:
    replace_section("peers", section)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child-raw":
        raw_worker(sys.argv[3], int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs per processing figure")
    parser.add_argument("--slow-jobs", type=int, default=0, help="Procrastinate's (jobs / 5)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--enqueue-calls", type=int, default=2000)
    parser.add_argument("--bulk-batches", type=int, default=10)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--baseline", default="", help="another migrate-cron tree, enqueue only")
    parser.add_argument("--only", default="process,enqueue,latency")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    args.slow_jobs = args.slow_jobs or max(500, args.jobs // 5)
    args.baseline = str(Path(args.baseline).resolve()) if args.baseline else ""
    only = set(args.only.split(","))
    figures: dict[str, dict[str, Figure]] = {}
    if "process" in only:
        figures["process_1"], figures["process_2"] = PROCESS_1, PROCESS_2
    if "enqueue" in only:
        figures["enqueue_single"] = enqueue_figures(True, args.baseline)
        figures["enqueue_bulk"] = enqueue_figures(False, args.baseline)
        figures["enqueue_single_no_flush"] = enqueue_figures(True, args.baseline, no_flush=True)
    results: dict[str, list[dict[str, float]]] = {key: [] for key in figures}
    results.update({f"{key}_cpu": [] for key in figures if key.startswith("enqueue")})
    if "latency" in only:
        results["latency"] = []
    loads = [os.getloadavg()[0]]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench_peers_jobs.py").write_text(JOBS_MODULE)
        for rnd in range(args.rounds):
            # Rotate who goes first, so no system always runs at the start of a round.
            for key, systems in figures.items():
                names = list(systems)
                names = names[rnd % len(names) :] + names[: rnd % len(names)]
                got, cpu = {}, {}
                for name in names:
                    value = systems[name](args, work)
                    if isinstance(value, dict):
                        got[name], cpu[name] = value["rate"], value["cpu_us"]
                    else:
                        got[name] = value
                    print(f"round {rnd + 1} {key} {name}: {got[name]:,.0f}/s", flush=True)
                results[key].append({n: got[n] for n in systems})
                if cpu:
                    results[f"{key}_cpu"].append({n: cpu[n] for n in systems})
                loads.append(os.getloadavg()[0])
            if "latency" in only:
                lat: dict[str, float] = {}
                for system in LATENCY_NAMES:
                    p50, p90 = latency(system, args.samples, work)
                    name = LATENCY_NAMES[system]
                    lat[f"{name} p50"], lat[f"{name} p90"] = p50, p90
                    print(f"round {rnd + 1} latency {name}: {p50:.1f} / {p90:.1f} ms", flush=True)
                results["latency"].append(lat)
                loads.append(os.getloadavg()[0])
    print(f"took {time.monotonic() - t0:.0f} s")
    section = report(results, args, loads)
    print(section)
    if not args.no_write:
        write_section(section)


if __name__ == "__main__":
    main()
