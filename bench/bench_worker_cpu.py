"""Client CPU per no-op job of the installed ``migrate-cron worker --once`` (defaults).

Wall time moves with whatever else the machine runs; the CPU the worker process spends does
much less. Each round enqueues ``--jobs`` no-op jobs into a fresh database, runs the command
to the end and reads the child's user + system CPU (``os.wait4``). A second run on an empty
queue measures start-up and shutdown, which is subtracted. With ``--baseline DIR`` (another
checkout's virtualenv ``bin``) the two commands alternate, round by round, on the same
databases; the median of the rounds is reported.

    python bench/bench_worker_cpu.py [--jobs 20000] [--rounds 3]
        [--backends postgresql,mariadb,sqlite] [--baseline /path/to/.venv/bin]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_worker import analyze, database, fresh_store

HANDLERS = """
from migrate_cron.handlers import handler

@handler("cpu-noop")
def noop(payload, ctx):
    return None
"""


def run_cpu(bin_dir: Path, url: str, work: Path, timeout: float = 900) -> float:
    """CPU seconds (user + system) of one ``worker --once`` run with the defaults."""
    cmd = [str(bin_dir / "migrate-cron"), "worker", "--database-url", url]
    cmd += ["--table-prefix", "bw_", "--once", "--import", "bench_cpu_jobs"]
    env = {k: v for k, v in os.environ.items() if k != "MIGRATE_CRON_DEBUG"}
    with open(work / "worker.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=work, stderr=log, stdout=log, env=env)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"worker did not end within {timeout}s; see {work}")
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"worker exited {proc.returncode}; see {work / 'worker.log'}")
    return float(usage.ru_utime + usage.ru_stime)


def one(bin_dir: Path, backend: str, jobs: int, work: Path) -> float:
    """Net CPU µs per job: a run over ``jobs`` minus a run over an empty queue."""
    with database(backend) as url:
        store = fresh_store(url)
        try:
            empty = run_cpu(bin_dir, url, work)
            store.enqueue_many("cpu-noop", [None] * jobs)
            analyze(store)
            full = run_cpu(bin_dir, url, work)
            with store.engine.connect() as conn:
                from sqlalchemy import text

                done = conn.execute(
                    text(f"SELECT count(*) FROM {store.tables.job.name} WHERE state = 'done'")
                ).scalar_one()
            if done != jobs:
                raise SystemExit(f"{done} of {jobs} jobs done; see {work}")
            return (full - empty) / jobs * 1e6
        finally:
            store.drop_schema()
            store.dispose()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--backends", default="postgresql,mariadb,sqlite")
    p.add_argument("--baseline", type=Path, help="the bin directory of another virtualenv")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    bins = {"this": Path(sys.executable).parent}
    if args.baseline:
        bins = {"base": args.baseline, **bins}
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench_cpu_jobs.py").write_text(HANDLERS)
        for backend in args.backends.split(","):
            for r in range(args.rounds):
                for name, bin_dir in bins.items():
                    us = one(bin_dir, backend, args.jobs, work)
                    results.setdefault(backend, {}).setdefault(name, []).append(us)
                    print(f"{backend} round {r + 1} {name}: {us:.0f} µs/job", flush=True)
    print()
    print("| database | " + " | ".join(f"{n} µs/job (median; rounds)" for n in bins) + " |")
    print("|---|" + "---:|" * len(bins))
    for backend, by in results.items():
        cells = [
            f"{statistics.median(v):.0f} ({', '.join(f'{x:.0f}' for x in v)})" for v in by.values()
        ]
        print(f"| {backend} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
