"""Many worker hosts on one PostgreSQL: where the database, not the worker, becomes the limit.

A PostgreSQL server of the bench's own (default settings, durable commits, like the shared
one) listens on 127.0.0.1 and on a bridge address; two network namespaces on this machine
("hosts" A and B), each with its own address on that bridge, run workers that reach the server
over TCP through their own interface — as two machines on one LAN would, minus the wire.

Scenarios, 20,000 no-op Python jobs each (``migrate-cron worker --once`` with its defaults):
1, 2 and 4 processes on the local host, then 1 + 1 and 2 + 2 processes on hosts A and B.
For each: jobs/s (first start to last finish, from the database), and CPU per job of the
workers (their rusage) and of the server (every postgres process's utime + stime from
/proc), with the machine's CPU use over the run: when the server's CPU per job rises with
more workers while the workers' stays flat, the database is the limit; on this 2-core machine
both share the cores, so the figures say which side needs them.

Needs root (network namespaces) and PostgreSQL's server binaries (/usr/lib/postgresql/*/bin).
Writes the "## many hosts on one database" section of docs/benchmarks.md.

    python bench/bench_hosts.py [--jobs 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_worker import HANDLERS, analyze, fresh_store, span
from benchdoc import machine, replace_section

from tests.faults.pgserver import ThrowawayPostgres, server_bin_dir

CLI = str(Path(sys.executable).with_name("migrate-cron"))
BRIDGE, BRIDGE_IP = "mcbench0", "10.231.0.1"
HOSTS = {"A": ("mcbench-a", "10.231.0.11"), "B": ("mcbench-b", "10.231.0.12")}
#: (label, processes per place): "local" is the root namespace, A and B the two hosts.
SCENARIOS = (
    ("1 process", {"local": 1}),
    ("2 processes", {"local": 2}),
    ("4 processes", {"local": 4}),
    ("hosts A + B, 1 each", {"A": 1, "B": 1}),
    ("hosts A + B, 2 each", {"A": 2, "B": 2}),
)


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


@contextlib.contextmanager
def two_hosts() -> Iterator[None]:
    """A bridge in this namespace and two namespaces on it, each with a veth and an address."""
    teardown()
    try:
        sh("ip", "link", "add", BRIDGE, "type", "bridge")
        sh("ip", "addr", "add", f"{BRIDGE_IP}/24", "dev", BRIDGE)
        sh("ip", "link", "set", BRIDGE, "up")
        for name, address in HOSTS.values():
            outside, inside = f"{name}-o", f"{name}-i"
            sh("ip", "netns", "add", name)
            sh("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            sh("ip", "link", "set", inside, "netns", name)
            sh("ip", "link", "set", outside, "master", BRIDGE)
            sh("ip", "link", "set", outside, "up")
            sh("ip", "netns", "exec", name, "ip", "addr", "add", f"{address}/24", "dev", inside)
            sh("ip", "netns", "exec", name, "ip", "link", "set", inside, "up")
            sh("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield
    finally:
        teardown()


def teardown() -> None:
    for name, _ in HOSTS.values():
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", f"{name}-o"], capture_output=True, check=False)
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)


@contextlib.contextmanager
def server() -> Iterator[ThrowawayPostgres]:
    """Our own PostgreSQL: default settings (durable commits), reachable from the bridge."""
    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
    pg = ThrowawayPostgres(bin_dir, settings={"listen_addresses": f"127.0.0.1,{BRIDGE_IP}"})
    try:
        pg.init()
        with open(pg.data / "pg_hba.conf", "a") as hba:
            hba.write("host all all 10.231.0.0/24 trust\n")
        pg.start()
        yield pg
    finally:
        pg.destroy()


def server_cpu_seconds(pg: ThrowawayPostgres) -> float:
    """CPU of the whole server: the postmaster's own and its reaped children's (a backend
    that served a finished worker is gone from /proc), plus its living children's."""
    pid = int((pg.data / "postmaster.pid").read_text().split()[0])
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(entry.name) == pid:
                total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            elif int(fields[1]) == pid:
                total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    parts = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = parts[3] + parts[4]
    return sum(parts) - idle, sum(parts)


@dataclass
class Result:
    rate: float
    worker_us: float
    server_us: float
    busy: float


def run_scenario(
    pg: ThrowawayPostgres, placement: dict[str, int], jobs: int, work: Path, startup: float
) -> Result:
    """``startup``: one worker's CPU seconds to start and stop on an empty queue, taken off
    each process's share so the per-job figure is the jobs' own."""
    local_url = pg.url
    store = fresh_store(local_url)
    try:
        if jobs:
            store.enqueue_many("bench-noop", [None] * jobs)
        analyze(store)
        procs = []
        for place, count in placement.items():
            host = "127.0.0.1" if place == "local" else BRIDGE_IP
            url = local_url.replace("127.0.0.1", host)
            argv = [CLI, "worker", "--database-url", url, "--table-prefix", "bw_", "--once"]
            argv += ["--import", "bench_worker_jobs"]
            if place != "local":
                argv = ["ip", "netns", "exec", HOSTS[place][0], *argv]
            procs += [argv] * count
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_before = server_cpu_seconds(pg)
        busy_before, total_before = machine_busy()
        running = [
            subprocess.Popen(a, cwd=work, stderr=subprocess.DEVNULL, start_new_session=True)
            for a in procs
        ]
        for proc in running:
            if proc.wait(timeout=600) != 0:
                raise SystemExit(f"a worker exited {proc.returncode}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_after = server_cpu_seconds(pg)
        busy_after, total_after = machine_busy()
        worker_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        if not jobs:
            return Result(0.0, worker_cpu, 0.0, 0.0)
        count, seconds = span(store)
        assert count == jobs, (count, jobs)
        return Result(
            rate=jobs / seconds,
            worker_us=max(worker_cpu - startup * len(procs), 0.0) / jobs * 1e6,
            server_us=(server_after - server_before) / jobs * 1e6,
            busy=(busy_after - busy_before) / max(total_after - total_before, 1),
        )
    finally:
        store.drop_schema()
        store.dispose()


def check_hosts(pg: ThrowawayPostgres) -> None:
    """Each host reaches the server over TCP from its own address (what the server sees)."""
    dsn = pg.url.replace("+psycopg", "").replace("127.0.0.1", BRIDGE_IP)
    probe = (
        "import psycopg, sys; conn = psycopg.connect(sys.argv[1]); "
        "print(conn.execute('SELECT inet_client_addr()').fetchone()[0])"
    )
    for name, address in HOSTS.values():
        seen = subprocess.run(
            ["ip", "netns", "exec", name, sys.executable, "-c", probe, dsn],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout.strip()  # fmt: skip
        if seen != address:
            raise SystemExit(f"host {name}: the server saw {seen!r}, not {address}")


def write_section(results: dict[str, list[Result]], jobs: int, rounds: int) -> str:
    lines = [
        "## many hosts on one database",
        "",
        f"`python bench/bench_hosts.py --jobs {jobs} --rounds {rounds}` on {date.today()}, "
        f"{machine()}, load average {os.getloadavg()[0]:.1f} at the end. A PostgreSQL of the "
        "bench's own (default settings: durable commits); hosts A and B are network namespaces "
        "with their own addresses on a bridge, reaching the server over TCP. Each cell: median "
        "(min–max) over the rounds, scenarios interleaved within a round. CPU per job: the "
        "workers' own (rusage) and the server's (all its processes); machine busy: the share "
        "of both cores in use during the run. A worker's start and stop on an empty queue "
        "(its imports and connections, measured first) is taken off its CPU.",
        "",
        "| workers | jobs/s | worker CPU µs/job | server CPU µs/job | machine busy |",
        "|---|---:|---:|---:|---:|",
    ]

    def cell(values: list[float], fmt: str) -> str:
        return (
            f"{format(statistics.median(values), fmt)} "
            f"({format(min(values), fmt)}–{format(max(values), fmt)})"
        )

    for label, _ in SCENARIOS:
        rs = results[label]
        lines.append(
            f"| {label} | {cell([r.rate for r in rs], ',.0f')} "
            f"| {cell([r.worker_us for r in rs], '.0f')} "
            f"| {cell([r.server_us for r in rs], '.0f')} "
            f"| {cell([100 * r.busy for r in rs], '.0f')} % |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print, do not update the doc")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_hosts.py needs root (network namespaces)")
    results: dict[str, list[Result]] = {label: [] for label, _ in SCENARIOS}
    with tempfile.TemporaryDirectory() as tmp, two_hosts(), server() as pg:
        check_hosts(pg)
        work = Path(tmp)
        (work / "bench_worker_jobs.py").write_text(HANDLERS)
        os.chmod(tmp, 0o755)
        startup = statistics.median(
            run_scenario(pg, {"local": 1}, 0, work, 0.0).worker_us for _ in range(3)
        )
        print(f"a worker's start and stop on an empty queue: {startup:.2f} s CPU", flush=True)
        for round_no in range(args.rounds):
            for label, placement in SCENARIOS:
                r = run_scenario(pg, placement, args.jobs, work, startup)
                results[label].append(r)
                print(
                    f"round {round_no + 1} {label}: {r.rate:,.0f} jobs/s, worker "
                    f"{r.worker_us:.0f} µs/job, server {r.server_us:.0f} µs/job, "
                    f"busy {100 * r.busy:.0f} %",
                    flush=True,
                )
    section = write_section(results, args.jobs, args.rounds)
    print(section)
    if not args.no_write:
        replace_section("many hosts on one database", section)


if __name__ == "__main__":
    main()
