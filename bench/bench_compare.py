"""This checkout against another one (``--base``), in one run: the cron line's cost, the
worker's throughput and the scheduler's tick, the three numbers a refactor must not move.

Each checkout runs its own bench scripts with its own virtualenv (``BASE/.venv``), the two
alternating script by script and round by round (base first in odd rounds, head first in even
ones), so a change of the machine's load during the run falls on both alike. Medians over
the rounds; the ratio is head / base. Writes the ``## before and after`` section of
docs/benchmarks.md.

    git worktree add /tmp/base <commit> && make -C /tmp/base install
    python bench/bench_compare.py --base /tmp/base [--rounds 2] [--label "issue 31"]
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.benchdoc import machine, replace_section

HEAD = Path(__file__).resolve().parent.parent

#: ``| sqlite | cron line | full wall | lean wall | full CPU | lean CPU |``
_ENQUEUE_ROW = re.compile(
    r"^\| (\w+) \| cron line \| [^|]+ \| (\d+) / \d+ ms \| [^|]+ \| (\d+) ms \|$", re.M
)
#: ``noop sqlite: {1: [1234.5], 2: [2345.6]}``
_NOOP_LINE = re.compile(r"^noop (\w+): (\{.*\})$", re.M)
#: scheduling alone: ``| tick p50 / p95 / max | 1.0 / 8.3 / 27.4 ms |``
_TICK_ALONE = re.compile(r"^\| tick p50 / p95 / max \| ([\d.]+) / ([\d.]+) / [\d.]+ ms \|$", re.M)
#: with the database: ``| sqlite | bulk | 93 / 89 ms | 8.3 / 32.9 / 58 ms | 0.15 ms |``
_TICK_DB = re.compile(r"^\| (\w+) \| bulk \| [^|]+ \| ([\d.]+) / [\d.]+ / [\d.]+ ms \|", re.M)


def run(tree: Path, script: str, *args: str) -> str:
    """``tree``'s own ``bench/<script>`` with its own interpreter and command on PATH. A
    script that writes its section of ``tree``'s docs/benchmarks.md anyway (``bench_worker``
    has no ``--no-write``) has the file put back as it was."""
    doc = tree / "docs" / "benchmarks.md"
    kept = doc.read_bytes() if doc.exists() else None
    env = dict(os.environ, PATH=f"{tree / '.venv' / 'bin'}:{os.environ['PATH']}")
    python = tree / ".venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), f"bench/{script}", *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if kept is not None:
        doc.write_bytes(kept)
    if done.returncode:
        raise SystemExit(f"{tree}: bench/{script} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def measure(tree: Path, backends: str, calls: int, jobs: int) -> dict[str, float]:
    """One round of the three numbers for ``tree``: name -> value."""
    found: dict[str, float] = {}
    out = run(tree, "bench_enqueue.py", "--no-write", "--calls", str(calls), "--backends", backends)
    for backend, wall, cpu in _ENQUEUE_ROW.findall(out):
        found[f"cron line, {backend}: wall ms"] = float(wall)
        found[f"cron line, {backend}: CPU ms"] = float(cpu)
    out = run(tree, "bench_worker.py", "--only", "noop", "--jobs", str(jobs), "--repeat", "1",
              "--backends", backends)  # fmt: skip
    for backend, rates in _NOOP_LINE.findall(out):
        for processes, values in ast.literal_eval(rates).items():
            found[f"worker, {backend}, {processes} process(es): jobs/s"] = float(values[0])
    out = run(tree, "bench_scheduler.py", "--no-write", "--backends", backends)
    alone = _TICK_ALONE.search(out)
    if alone:
        found["scheduler tick, scheduling alone: p50 ms"] = float(alone.group(1))
        found["scheduler tick, scheduling alone: p95 ms"] = float(alone.group(2))
    for backend, p50 in _TICK_DB.findall(out):
        found[f"scheduler tick, {backend} (bulk write): p50 ms"] = float(p50)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backends", default="sqlite,postgresql,mariadb")
    parser.add_argument("--calls", type=int, default=9, help="enqueue calls per case")
    parser.add_argument("--jobs", type=int, default=5000, help="no-op jobs per worker run")
    parser.add_argument("--label", default="", help="what the head changed, for the heading")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    base = args.base.resolve()
    rev = {t: _revision(t) for t in (base, HEAD)}
    for tree in (base, HEAD):  # as an install leaves it: with PYTHONDONTWRITEBYTECODE set, a
        # module changed since its last bytecode is compiled again on every cron call
        python = tree / ".venv" / "bin" / "python"
        subprocess.run([str(python), "-m", "compileall", "-q", "migrate_cron"], cwd=tree,
                       check=True, capture_output=True)  # fmt: skip
    samples: dict[Path, list[dict[str, float]]] = {base: [], HEAD: []}
    for n in range(args.rounds):
        for tree in (base, HEAD) if n % 2 == 0 else (HEAD, base):
            samples[tree].append(measure(tree, args.backends, args.calls, args.jobs))
            print(f"round {n + 1}: {rev[tree]} {samples[tree][-1]}", flush=True)
    section = _section(samples, base, rev, args)
    print(section)
    if not args.no_write:
        replace_section("before and after", section)


def _revision(tree: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def _section(
    samples: dict[Path, list[dict[str, float]]],
    base: Path,
    rev: dict[Path, str],
    args: argparse.Namespace,
) -> str:
    names = [k for k in samples[HEAD][0] if all(k in s for s in (*samples[base], *samples[HEAD]))]
    lines = [
        "## before and after",
        "",
        f"### {args.label or 'this checkout against another'} ({date.today()}, {machine()})",
        "",
        f"`python bench/bench_compare.py --base …`: {rev[base]} (base) against {rev[HEAD]} "
        f"(head), each with its own virtualenv, alternating script by script over "
        f"{args.rounds} round(s); medians of the rounds. Cron line: `bench_enqueue.py`'s lean "
        f"cron line ({args.calls} calls per case, median); worker: `bench_worker.py` no-op "
        f"handler, {args.jobs:,} jobs; scheduler: `bench_scheduler.py`, 10,000 schedules. "
        "Both checkouts' bytecode compiled first (`compileall`), as an install leaves it. "
        "For times lower is better, for jobs/s higher; *change* is head against base in the "
        "direction that is worse.",
        "",
        "| number | base | head | head / base | change |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in names:
        before = statistics.median(s[name] for s in samples[base])
        after = statistics.median(s[name] for s in samples[HEAD])
        ratio = after / before if before else float("nan")
        worse = ratio - 1 if "jobs/s" not in name else 1 - ratio
        lines.append(
            f"| {name} | {before:,.1f} | {after:,.1f} | {ratio:.3f} | {worse * 100:+.1f} % |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
