"""What the size of the registry costs cron's `migrate-cron enqueue NAME` (issue 30, item 8).

Registries of 10, 10,000 and 100,000 jobs in the shape `generate registry` writes (the plan's
comments, ten keys, a `[jobs.NAME.source]` table: ~610 bytes a job, 6 MB for 10,000), the
job asked for last in the file. The installed command runs the exact line `migrate --to
enqueue` writes (`enqueue NAME --quiet --registry … --database-url sqlite:///…`, slot
`auto`: the no-op every host but the first gets), the sizes alternating call by call; wall
time and CPU (user + system) medians and the largest resident set, per call (`wait4`).

Next to it, in-process: `registry.load_job` (what the command does: the job's tables found in
the bytes, `registry.text`) and `load_registry` (the whole file parsed and validated: what
every call did before).

Target: the 10,000-job registry within 20 ms of the 10-job one.

    python bench/bench_registry_size.py [--calls 15] [--sizes 10,10000,100000]
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
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_scheduler import machine, write_block

CLI = str(Path(sys.executable).with_name("migrate-cron"))
TARGET_MS = 20

ENTRY = """\
[jobs.report-{i}]
# crontab:{line} — plan step 4 (leave alone): a report at fixed times: a schedule is right
# policy skip: the next run does the same work; nothing is lost by skipping
# cwd: root's home, where cron runs the line
schedule = "{m} {h} * * *"
timezone = "UTC"
command = "/usr/local/bin/report-{i}.sh --all > /var/log/report-{i}.log 2>&1"
shell = "/bin/sh"
user = "root"
env = {{MAILTO = "ops@example.com"}}
cwd = "/root"
policy = "skip"
mode = "enqueue"

[jobs.report-{i}.source]
file = "/etc/cron.d/reports"
line = {line}
text = "{m} {h} * * * root /usr/local/bin/report-{i}.sh --all > /var/log/report-{i}.log 2>&1"
user = "root"

"""


def registry(path: Path, jobs: int) -> str:
    """Write a registry of ``jobs`` entries; returns the name of the last one."""
    with path.open("w") as f:
        f.write("# migrate-cron registry\n\n")
        for i in range(jobs):
            f.write(ENTRY.format(i=i, line=i + 2, m=i % 60, h=i % 24))
    return f"report-{jobs - 1}"


def call(args: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, max RSS MiB) of one run of the command."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)  # --quiet: at most one line on stderr
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else b""
    if proc.returncode != 0:
        raise RuntimeError(f"{args}: {err.decode().strip()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def in_process(path: Path, name: str) -> tuple[float, float, float]:
    """load_job (best of 3) and the whole file's load, in ms, and that process's max RSS in
    MiB — in a process of their own, so the whole file's objects do not inflate the RSS of
    the commands forked after."""
    code = (
        "import json, resource, sys, time\n"
        "from migrate_cron.registry import load_job, load_registry\n"
        "path, name = sys.argv[1:]\n"
        "def timed(fn):\n"
        "    t = time.perf_counter(); fn(); return (time.perf_counter() - t) * 1000\n"
        "fast = min(timed(lambda: load_job(path, name)) for _ in range(3))\n"
        "whole = timed(lambda: load_registry(path).get(name))\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps([fast, whole, rss]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path), name], check=True,
                         capture_output=True, text=True, timeout=600).stdout  # fmt: skip
    fast, whole, rss = json.loads(out)
    return fast, whole, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--sizes", default="10,10000,100000")
    opts = parser.parse_args()
    sizes = [int(s) for s in opts.sizes.split(",")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIGRATE_CRON_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cron does not set it (docs/benchmarks.md)
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/q.db"
        subprocess.run([CLI, "db", "upgrade", "--database-url", db], check=True,
                       capture_output=True)  # fmt: skip
        lines: dict[int, list[str]] = {}
        loads: dict[int, tuple[float, float, float]] = {}
        size_mb: dict[int, float] = {}
        for n in sizes:
            path = Path(tmp) / f"r{n}.toml"
            name = registry(path, n)
            size_mb[n] = path.stat().st_size / 1e6
            lines[n] = [CLI, "enqueue", name, "--quiet", "--registry", str(path),
                        "--database-url", db]  # fmt: skip
            call(lines[n], env)  # the first call enqueues; the rest are the no-op
        samples: dict[int, list[tuple[float, float, float]]] = {n: [] for n in sizes}
        for _ in range(opts.calls):
            for n in sizes:
                samples[n].append(call(lines[n], env))
        for n in sizes:
            loads[n] = in_process(Path(tmp) / f"r{n}.toml", lines[n][2])
    text = report(sizes, samples, loads, size_mb, opts.calls)
    print(text)
    write_block("bench_registry_size", text)


def report(
    sizes: list[int],
    samples: dict[int, list[tuple[float, float, float]]],
    loads: dict[int, tuple[float, float, float]],
    size_mb: dict[int, float],
    calls: int,
) -> str:
    def med(n: int, i: int) -> float:
        return statistics.median(s[i] for s in samples[n])

    base = sizes[0]
    rows = [
        f"| {n:,} | {size_mb[n]:.1f} MB | {med(n, 0) * 1000:.0f} ms | "
        f"{(med(n, 0) - med(base, 0)) * 1000:+.0f} ms | {med(n, 1) * 1000:.0f} ms | "
        f"{(med(n, 1) - med(base, 1)) * 1000:+.0f} ms | {max(s[2] for s in samples[n]):.0f} MiB | "
        f"{loads[n][0]:.1f} ms | {loads[n][1]:,.0f} ms, {loads[n][2]:,.0f} MiB |"
        for n in sizes
    ]
    verdicts = [
        f"{n:,} jobs: {(med(n, 0) - med(base, 0)) * 1000:+.1f} ms wall, "
        f"{(med(n, 1) - med(base, 1)) * 1000:+.1f} ms CPU"
        for n in sizes[1:]
    ]
    return "\n".join(
        [
            f"### enqueue and the registry's size ({datetime.now(UTC):%Y-%m-%d}, {machine()})",
            "",
            f"`python bench/bench_registry_size.py`: {calls} calls per size, the sizes "
            "alternating call by call; the cron line on SQLite (slot `auto`, already enqueued), "
            f"the job asked for last in the file. Target: {TARGET_MS} ms at most between "
            f"{base:,} and 10,000 jobs. *load_job* / *whole file*: in-process, the job's entry "
            "read as the command reads it / the whole registry parsed and validated (what "
            "every call did before) and that process's max RSS.",
            "",
            "| jobs | registry | wall | vs smallest | CPU | vs smallest | max RSS | load_job "
            "| whole file |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "Differences of the medians: " + "; ".join(verdicts) + ".",
        ]
    )


if __name__ == "__main__":
    main()
