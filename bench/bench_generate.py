"""Benchmark: ``migrate-cron generate registry`` on generated crontabs of 10,000 to 100,000
lines: time and peak memory, which must grow linearly with the crontab (issue 30).

Crontabs: the two generators of ``bench_analyze.py`` — ``realistic`` (tenant blocks made from
samples/, ~35 % job lines) and ``hard`` (almost every command distinct, ~89 % job lines).
For each size, the installed command twice: a first run (no registry yet: every job line
becomes a new entry) and a re-run (the same crontab against the registry just written: every
entry is kept, the file is not rewritten). CPU is user + system of the command and of its
children (ShellCheck); memory is its peak resident set (``os.wait4``).

    python bench/bench_generate.py [--sizes 10000,20000,50000,100000] [--case realistic|hard|both]
        [--no-rerun] [--pythonpath DIR] [--check] [--no-doc]

``--pythonpath DIR`` runs the ``migrate_cron`` package found in DIR instead (e.g. a ``git
archive`` of an older commit), with this interpreter. ``--check`` exits 1 when the CPU time or
the memory per line of the largest crontab is more than 1.5 times that of the smallest.
Writes the "## generate registry" section of docs/benchmarks.md (not with ``--pythonpath``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_analyze import generate, generate_realistic
from benchdoc import machine, replace_section

SIZES = (10_000, 20_000, 50_000, 100_000)
#: How much more CPU or memory per line the largest crontab may take than the smallest.
LINEAR_SLACK = 1.5


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    rss_mb: float
    code: int


@dataclass(frozen=True)
class Row:
    case: str
    lines: int
    jobs: int
    registry_mb: float
    first: Run
    again: Run | None
    load: float


def command(pythonpath: str | None) -> tuple[list[str], dict[str, str]]:
    """The command line to run, and its environment."""
    env = {**os.environ, "NO_COLOR": "1"}
    if pythonpath is None:
        exe = Path(sys.executable).with_name("migrate-cron")
        return [str(exe) if exe.exists() else "migrate-cron"], env
    code = "import sys; from migrate_cron.cli.main import main; sys.argv[0] = 'x'; main()"
    return [sys.executable, "-c", code], {**env, "PYTHONPATH": pythonpath}


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    """Run ``argv`` to its end: wall time, CPU of it and its children, its peak RSS."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=devnull, stderr=devnull)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def measure(case: str, lines: int, rerun: bool, pythonpath: str | None) -> Row:
    text = generate(lines) if case == "hard" else generate_realistic(lines)
    argv, env = command(pythonpath)
    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
        work = Path(tmp)
        (work / "jobs.crontab").write_text(text)
        registry = work / "migrate-cron.toml"
        run = [*argv, "generate", "registry", "jobs.crontab", "-r", registry.name, "--tz", "UTC"]
        run += ["--format", "user"]
        first = timed(run, env, work)
        written = registry.read_bytes()
        again = timed(run, env, work) if rerun else None
        if again is not None and registry.read_bytes() != written:
            raise SystemExit(f"{case} {lines}: the re-run changed the registry")
    jobs = written.count(b"\nmode = ")
    return Row(case, lines, jobs, len(written) / 1e6, first, again, os.getloadavg()[0])


def ratios(rows: list[Row], key: str) -> str:
    """How the largest run compares with the smallest, per line: CPU and memory."""
    small, big = rows[0], rows[-1]
    runs = [(getattr(r, key), r.lines) for r in (small, big)]
    if any(run is None for run, _ in runs):
        return ""
    (a, na), (b, nb) = runs
    cpu = (b.cpu / nb) / (a.cpu / na)
    mem = (b.rss_mb / nb) / (a.rss_mb / na)
    return f"per line, {nb:,} vs {na:,} lines: CPU ×{cpu:.2f}, memory ×{mem:.2f}"


def print_rows(rows: list[Row]) -> None:
    for r in rows:
        again = (
            f"re-run {r.again.cpu:6.1f} s CPU {r.again.wall:6.1f} s wall {r.again.rss_mb:6.0f} MB"
            if r.again
            else ""
        )
        print(
            f"{r.case:9} {r.lines:>7,} lines {r.jobs:>6,} jobs: first {r.first.cpu:6.1f} s CPU "
            f"{r.first.wall:6.1f} s wall {r.first.rss_mb:6.0f} MB (exit {r.first.code})  {again}"
            f"  load {r.load:.1f}",
            flush=True,
        )


def section(rows: list[Row], started: datetime) -> str:
    lines = [
        "## generate registry",
        "",
        f"`python bench/bench_generate.py` on {started:%Y-%m-%d %H:%M} UTC, one run, "
        f"{machine()}; 1-minute load average {min(r.load for r in rows):.1f}–"
        f"{max(r.load for r in rows):.1f} after each size. The installed `migrate-cron "
        "generate registry FILE -r REGISTRY --tz UTC --format user`: *first run* with no "
        "registry yet (every job line a new entry), *re-run* on the same crontab and the "
        "registry just written (every entry kept, nothing rewritten). CPU = user + system of "
        "the command and its ShellCheck processes; memory = its peak RSS. Crontabs from "
        "`bench_analyze.py`: *realistic* = tenant blocks made from samples/, *hard* = almost "
        "every command distinct. Exit 1 on *hard*: its few invalid lines are reported.",
        "",
        "| crontab | lines | jobs | registry | first run: CPU / wall | memory "
        "| re-run: CPU / wall | memory |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        again = (
            f"{r.again.cpu:.1f} / {r.again.wall:.1f} s | {r.again.rss_mb:,.0f} MB"
            if r.again
            else "– | –"
        )
        lines.append(
            f"| {r.case} | {r.lines:,} | {r.jobs:,} | {r.registry_mb:.1f} MB "
            f"| {r.first.cpu:.1f} / {r.first.wall:.1f} s | {r.first.rss_mb:,.0f} MB | {again} |"
        )
    lines.append("")
    for case in dict.fromkeys(r.case for r in rows):
        mine = [r for r in rows if r.case == case]
        if len(mine) > 1:
            growth = "; re-run ".join(filter(None, [ratios(mine, "first"), ratios(mine, "again")]))
            lines.append(f"- {case}: first run {growth} (1.00 = linear).")
    lines.append("")
    return "\n".join(lines)


def linear(rows: list[Row]) -> bool:
    for case in dict.fromkeys(r.case for r in rows):
        mine = [r for r in rows if r.case == case]
        small, big = mine[0], mine[-1]
        for key in ("first", "again"):
            a, b = getattr(small, key), getattr(big, key)
            if a is None or b is None or small is big:
                continue
            for value in ("cpu", "rss_mb"):
                per_line = (getattr(b, value) / big.lines) / (getattr(a, value) / small.lines)
                if per_line > LINEAR_SLACK:
                    print(f"NOT LINEAR: {case} {key} {value} per line ×{per_line:.2f}")
                    return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--case", choices=("realistic", "hard", "both"), default="both")
    parser.add_argument("--no-rerun", action="store_true")
    parser.add_argument("--pythonpath", help="run the migrate_cron package in this directory")
    parser.add_argument("--check", action="store_true", help="exit 1 when not linear")
    parser.add_argument("--no-doc", action="store_true", help="leave docs/benchmarks.md alone")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    cases = ("realistic", "hard") if args.case == "both" else (args.case,)
    started = datetime.now(UTC)
    rows: list[Row] = []
    for case in cases:
        for lines in sizes:
            rows.append(measure(case, lines, not args.no_rerun, args.pythonpath))
            print_rows(rows[-1:])
    text = section(rows, started)
    if not args.no_doc and args.pythonpath is None:
        replace_section("generate registry", text)
    print(text)
    return 1 if args.check and not linear(rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
