"""Worker throughput, pickup latency, command spawn cost and memory, with the real command.

- no-op Python jobs/s on each backend with 1 and 2 worker processes
  (``migrate-cron worker --once --concurrency 1 --batch 100``);
- pickup latency on PostgreSQL: an idle worker (``--poll 30``) woken by NOTIFY;
- ``/bin/true`` command jobs/s next to the bare ``sh -c true`` spawn rate;
- worker RSS at 0, 50k and 100k jobs.

Rates come from the database (first ``started_at`` to last ``finished_at``), so process start-up
is not counted. Tables are ANALYZEd after loading, as autovacuum would have done on a live
queue. Writes the "## worker" section of docs/benchmarks.md.

    python bench/bench_worker.py [--jobs 20000] [--backends postgresql,mariadb,sqlite]
                                 [--rss-jobs 100000] [--only noop,latency,command,rss]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchdoc import replace_section

from migrate_cron.store import Store, open_store

PG = os.environ.get("MIGRATE_CRON_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MARIADB = os.environ.get(
    "MIGRATE_CRON_TEST_MARIADB_URL", "mariadb+pymysql://root@127.0.0.1:3306/test"
)
CLI = str(Path(sys.executable).with_name("migrate-cron"))
HANDLERS = """
import time
from migrate_cron.handlers import handler

@handler("bench-noop")
def noop(payload, ctx):
    return None

@handler("bench-latency")
def latency(payload, ctx):
    return repr(time.time())

@handler("bench-fail")
def fail(payload, ctx):
    raise RuntimeError("bench: fails on purpose")
"""
REGISTRY = '[jobs.bench-true]\ncommand = "/bin/true"\n'


# ---------------------------------------------------------------------------- plumbing
@contextmanager
def database(backend: str) -> Iterator[str]:
    """A throwaway database (a temp SQLite file, or a fresh database on the server)."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{tmp}/bench.db"
        return
    from sqlalchemy.engine import make_url

    url = make_url(PG if backend == "postgresql" else MARIADB)
    dbname = f"mcw_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {dbname}"))
    try:
        yield url.set(database=dbname).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            if backend == "postgresql":
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :d AND pid <> pg_backend_pid()"
                    ),
                    {"d": dbname},
                )
            conn.execute(text(f"DROP DATABASE IF EXISTS {dbname}"))
        admin.dispose()


def fresh_store(url: str) -> Store:
    store = open_store(url, prefix="bw_")
    store.drop_schema()
    store.create_schema()
    return store


def analyze(store: Store) -> None:
    """Table statistics as a live queue has them (autovacuum); a just-filled table has none."""
    name = store.tables.job.name
    if store.family == "sqlite":
        return
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            f"ANALYZE {name}" if store.family == "postgresql" else f"ANALYZE TABLE {name}"
        )


def span(store: Store, state: str = "done") -> tuple[int, float]:
    """Jobs in ``state`` (done) and seconds from the first start to the last finish
    (benchmark-only SQL)."""
    job = store.tables.job.name
    with store.engine.connect() as conn:
        row = conn.execute(
            text(
                f"SELECT count(*), min(started_at), max(finished_at) FROM {job} "
                "WHERE state = :state"
            ),
            {"state": state},
        ).one()
    count, first, last = row
    if isinstance(first, str):
        first, last = datetime.fromisoformat(first), datetime.fromisoformat(last)
    return int(count), (last - first).total_seconds()


def done_count(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.execute(
                text(f"SELECT count(*) FROM {store.tables.job.name} WHERE state = 'done'")
            ).scalar_one()
        )


def worker_cmd(url: str, *args: str, cli: str = CLI) -> list[str]:
    return [cli, "worker", "--database-url", url, "--table-prefix", "bw_", *args]


def run_workers(cmds: list[list[str]], cwd: Path, timeout: float = 600) -> None:
    procs = [spawn(cmd, cwd, f"worker-{i}.log") for i, cmd in enumerate(cmds)]
    try:
        for proc in procs:
            if proc.wait(timeout) != 0:
                raise SystemExit(f"worker exited {proc.returncode}; see {cwd}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def spawn(cmd: list[str], work: Path, log_name: str) -> subprocess.Popen[bytes]:
    """Start a long-running worker in its own session; stderr to ``work/log_name``."""
    with open(work / log_name, "w") as log:
        return subprocess.Popen(cmd, cwd=work, stderr=log, start_new_session=True)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


# ---------------------------------------------------------------------------- benchmarks
#: The flags of the tuned no-op figure ("## worker"); ``bench_backends.py`` passes none.
TUNED = ("--concurrency", "1", "--batch", "100")


def bench_noop(
    backend: str, jobs: int, processes: int, work: Path, flags: tuple[str, ...] = TUNED,
    cli: str = CLI, outcome: str = "done",
) -> float:  # fmt: skip
    """Jobs/s of ``processes`` workers (``cli``, with ``flags``) over ``jobs`` no-op jobs;
    with ``outcome`` "failed", jobs whose handler raises, one attempt each (each run ends
    the job ``failed``: the finisher's failure path, without the retries' waits)."""
    kind, attempts = ("bench-fail", 1) if outcome == "failed" else ("bench-noop", 5)
    with database(backend) as url:
        store = fresh_store(url)
        try:
            store.enqueue_many(kind, [None] * jobs, max_attempts=attempts)
            analyze(store)
            cmd = worker_cmd(url, "--once", "--import", "bench_worker_jobs", *flags, cli=cli)
            run_workers([cmd] * processes, work)
            count, seconds = span(store, outcome)
            if count != jobs:
                raise SystemExit(f"{count} of {jobs} jobs done; see {work}")
            return jobs / seconds
        finally:
            store.drop_schema()
            store.dispose()


def bench_latency(samples: int, work: Path) -> dict[str, float]:
    with database("postgresql") as url:
        store = fresh_store(url)
        proc = spawn(
            worker_cmd(url, "--import", "bench_worker_jobs", "--poll", "30", "--concurrency", "1"),
            work,
            "latency.log",
        )
        try:
            wait_until(lambda: "worker-start" in (work / "latency.log").read_text(), 30, "start")
            time.sleep(1.0)  # let it settle into its LISTEN wait
            sent = []
            for _ in range(samples):
                t0 = time.time()
                job_id = store.enqueue("bench-latency").job_id
                sent.append((job_id, t0, time.time()))
                time.sleep(0.03)  # idle again before the next one
            wait_until(lambda: done_count(store) == samples, 60, "latency jobs")
            from_call, from_commit = [], []
            for job_id, t0, t1 in sent:
                started = float(store.get(job_id).output)  # type: ignore[union-attr, arg-type]
                from_call.append((started - t0) * 1000)
                from_commit.append((started - t1) * 1000)
            return {
                "p50_call": statistics.median(from_call),
                "p95_call": statistics.quantiles(from_call, n=20)[-1],
                "p50_commit": statistics.median(from_commit),
                "p95_commit": statistics.quantiles(from_commit, n=20)[-1],
            }
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
            store.drop_schema()
            store.dispose()


def bare_spawn_rate(n: int, threads: int, command: str) -> float:
    """``sh -c COMMAND`` as fast as Python can start it (the runner's Popen options)."""

    def spawn(count: int) -> None:
        for _ in range(count):
            p = subprocess.Popen(
                ["/bin/sh", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            p.communicate()

    per = n // threads
    pool = [threading.Thread(target=spawn, args=(per,)) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return per * threads / (time.perf_counter() - t0)


def bench_command(jobs: int, flags: list[str], work: Path) -> float:
    """``/bin/true`` registry jobs/s of one worker started with ``--once`` and ``flags``."""
    with database("postgresql") as url:
        store = fresh_store(url)
        try:
            store.enqueue_many("bench-true", [None] * jobs)
            analyze(store)
            cmd = worker_cmd(url, "--once", *flags)
            run_workers([cmd], work)
            count, seconds = span(store)
            assert count == jobs
            return jobs / seconds
        finally:
            store.drop_schema()
            store.dispose()


def bench_rss(total: int, work: Path) -> dict[int, int]:
    """The worker's RSS (KiB) with its defaults, as done jobs pass marks: at start, after the
    first 10,000 (its working set built: pools, compiled statements, the learnt batch), then
    every quarter up to ``total``. Flat means the last within 10 % of the 10,000 mark."""
    first = min(10_000, total)
    marks = sorted({0, first, *(total * q // 4 for q in (1, 2, 3, 4))})
    seen: dict[int, int] = {}
    with database("postgresql") as url:
        store = fresh_store(url)
        proc = spawn(worker_cmd(url, "--import", "bench_worker_jobs"), work, "rss.log")
        try:
            wait_until(lambda: "worker-start" in (work / "rss.log").read_text(), 30, "start")
            time.sleep(1.0)
            seen[0] = rss_kib(proc.pid)
            chunk, enqueued = 10_000, 0
            for mark in marks[1:]:
                while enqueued < min(mark + 2 * chunk, total):  # keep the queue ahead
                    store.enqueue_many("bench-noop", [None] * min(chunk, total - enqueued))
                    if enqueued == 0:
                        analyze(store)
                    enqueued += min(chunk, total - enqueued)
                wait_until(lambda m=mark: done_count(store) >= m, 1800, f"{mark} jobs")
                seen[mark] = rss_kib(proc.pid)
                print(f"rss at {mark:,} jobs: {seen[mark]:,} KiB", flush=True)
            return seen
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
            store.drop_schema()
            store.dispose()


# ---------------------------------------------------------------------------- report
def machine() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in out.splitlines()
            if line.startswith("Model name")
        ),
        "unknown CPU",
    )
    load = os.getloadavg()[0]
    return (
        f"{model}, {os.cpu_count()} CPUs, shared with other work while measuring "
        f"(1-minute load average {load:.1f} at the end)"
    )


def write_section(r: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "## worker",
        "",
        f"`python bench/bench_worker.py` on {datetime.now(UTC):%Y-%m-%d}, {machine()}. "
        "The installed `migrate-cron worker` command; rates are jobs divided by the time from the "
        "first `started_at` to the last `finished_at` in the table (start-up not counted); logs "
        "on (one line per start and finish, to a file). Tables ANALYZEd after loading.",
        "",
    ]
    if "noop" in r:
        lines += [
            f"No-op Python handler, {args.jobs:,} jobs, `--once --concurrency 1 --batch 100`, "
            f"{args.repeat} runs each: best (median) — the machine's other load moves the "
            "median a lot, the best run is closest to what the worker can do:",
            "",
            "| backend | 1 worker process | 2 worker processes |",
            "|---|---:|---:|",
        ]
        for backend, runs in r["noop"].items():
            one, two = (
                f"{max(runs[n]):,.0f} ({statistics.median(runs[n]):,.0f}) jobs/s" for n in (1, 2)
            )
            lines.append(f"| {backend} | {one} | {two} |")
        lines.append("")
    if "latency" in r:
        lat = r["latency"]
        lines += [
            f"Pickup latency, PostgreSQL, idle worker on LISTEN (`--poll 30`), {args.samples} "
            "jobs enqueued one at a time 30 ms apart, measured to the handler's first line: "
            f"p50 {lat['p50_call']:.1f} ms / p95 {lat['p95_call']:.1f} ms from the `enqueue` "
            f"call (includes its INSERT and commit), p50 {lat['p50_commit']:.1f} ms / "
            f"p95 {lat['p95_commit']:.1f} ms from the commit returning.",
            "",
        ]
    if "command" in r:
        c = r["command"]
        lines += [
            f"`/bin/true` as a registry command on PostgreSQL ({args.command_jobs:,} jobs, "
            "`--once --concurrency N`), with `--batch N` (each claim, with its "
            "commit, waits for a free thread) and with `--batch 8N` (one batch waits beside the "
            "running jobs), next to Python starting the shell with the runner's Popen options "
            "and nothing else (`true` is a shell builtin; `/bin/true` is one more exec, as in "
            "the worker's job):",
            "",
            "| threads N | worker, `--batch N` | worker, `--batch 8N` | bare `sh -c true` "
            "| bare `sh -c /bin/true` |",
            "|---:|---:|---:|---:|---:|",
        ]
        for threads, (worker, prefetch, bare, bare_exec) in c.items():
            lines.append(
                f"| {threads} | {worker:,.0f}/s | {prefetch:,.0f}/s | {bare:,.0f}/s "
                f"| {bare_exec:,.0f}/s |"
            )
        lines.append("")
        if "command_defaults" in r and 1 in c:
            defaults, one_at_a_time = r["command_defaults"], c[1][3]
            lines += [
                "With the worker's defaults (`migrate-cron worker --once`, no flags: 4 threads, "
                f"the batch learnt from run times): **{defaults:,.0f}/s**, "
                f"{defaults / one_at_a_time:.0%} of Python starting `sh -c /bin/true` one at a "
                f"time ({one_at_a_time:,.0f}/s; target ≥ 80 %).",
                "",
            ]
    section = "\n".join(lines)
    if len(lines) > 4:  # a run of the throughput parts, not only the memory one
        replace_section("worker", section)
    if "rss" in r:
        section = rss_section(r["rss"]) if len(lines) <= 4 else section + rss_section(r["rss"])
    return section


def rss_section(seen: dict[int, int]) -> str:
    """The "## worker memory" section (its own, so a long memory run leaves the throughput
    figures alone)."""
    first = next((k for k in seen if k >= 10_000), max(seen))
    last = max(seen)
    cells = " / ".join(f"{v / 1024:.1f} MiB at {k:,}" for k, v in seen.items())
    growth = (seen[last] - seen[first]) / seen[first] if seen[first] else 0.0
    section = "\n".join(
        [
            "## worker memory",
            "",
            f"`python bench/bench_worker.py --only rss --rss-jobs {last}` on {date.today()}, "
            f"{machine()}. One `migrate-cron worker` with its defaults on PostgreSQL, no-op "
            "handler, jobs enqueued in chunks of 10,000 while it runs, RSS from /proc as done "
            "jobs pass each mark:",
            "",
            f"{cells} jobs: **{growth:+.1%}** from {first:,} to {last:,} jobs (target: within "
            "10 %).",
            "",
        ]
    )
    replace_section("worker memory", section)
    return section


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--command-jobs", type=int, default=2_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rss-jobs", type=int, default=100_000)
    parser.add_argument("--backends", default="postgresql,mariadb,sqlite")
    parser.add_argument("--only", default="noop,latency,command,rss")
    args = parser.parse_args()
    only = set(args.only.split(","))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench_worker_jobs.py").write_text(HANDLERS)
        (work / "migrate-cron.toml").write_text(REGISTRY)
        if "noop" in only:
            results["noop"] = {}
            for backend in args.backends.split(","):
                runs = {
                    n: [bench_noop(backend, args.jobs, n, work) for _ in range(args.repeat)]
                    for n in (1, 2)
                }
                results["noop"][backend] = runs
                print(f"noop {backend}: {runs}", flush=True)
        if "latency" in only:
            results["latency"] = bench_latency(args.samples, work)
            print("latency", results["latency"], flush=True)
        if "command" in only:
            results["command"] = {}
            for threads in (1, 4):
                fixed = ["--concurrency", str(threads), "--batch"]
                worker = bench_command(args.command_jobs, [*fixed, str(threads)], work)
                prefetch = bench_command(args.command_jobs, [*fixed, str(8 * threads)], work)
                bare = bare_spawn_rate(args.command_jobs, threads, "true")
                bare_exec = bare_spawn_rate(args.command_jobs, threads, "/bin/true")
                results["command"][threads] = (worker, prefetch, bare, bare_exec)
                print(
                    f"command x{threads}: worker {worker:,.0f}/s, with --batch {8 * threads} "
                    f"{prefetch:,.0f}/s, bare {bare:,.0f}/s, bare exec {bare_exec:,.0f}/s",
                    flush=True,
                )
            defaults = bench_command(args.command_jobs, [], work)
            results["command_defaults"] = defaults
            print(f"command, the worker's defaults: {defaults:,.0f}/s", flush=True)
        if "rss" in only:
            results["rss"] = bench_rss(args.rss_jobs, work)
            print("rss KiB", results["rss"], flush=True)
    print(write_section(results, args))


if __name__ == "__main__":
    main()
