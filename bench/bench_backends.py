"""The worker with its defaults on each database, in one interleaved run: issue 34's "MariaDB
worker at 70 % of PostgreSQL's" is a ratio, so both sides are taken in the same round.

Per round and per backend: a fresh database, ``--jobs`` no-op jobs, the installed ``migrate-cron
worker --once`` with no tuning flag, 1 (and with ``--processes 1,2``, 2) processes; the rate is
jobs divided by the time from the first ``started_at`` to the last ``finished_at`` (as
bench_worker.py). The backends' order rotates from round to round, so none always runs first.
``--baseline BIN`` (another virtualenv's ``bin``) runs that checkout's command too, right after
this one, for before/after in the same run. ``--outcome failed``: jobs whose handler raises,
one attempt each, for the finisher's failure path.

    python bench/bench_backends.py [--jobs 20000] [--rounds 3] [--processes 1,2]
        [--backends postgresql,mariadb,sqlite] [--baseline /path/to/.venv/bin]
        [--outcome done|failed]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_worker import HANDLERS, bench_noop


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--processes", default="1")
    p.add_argument("--backends", default="postgresql,mariadb,sqlite")
    p.add_argument("--baseline", type=Path, help="the bin directory of another virtualenv")
    p.add_argument("--outcome", choices=("done", "failed"), default="done")
    args = p.parse_args()
    bins = {"this": Path(sys.executable).parent}
    if args.baseline:
        bins["base"] = args.baseline
    backends = args.backends.split(",")
    counts = [int(n) for n in args.processes.split(",")]
    # results[(name, processes)][backend] = rates per round
    results: dict[tuple[str, int], dict[str, list[float]]] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench_worker_jobs.py").write_text(HANDLERS)
        for r in range(args.rounds):
            order = backends[r % len(backends) :] + backends[: r % len(backends)]
            for processes in counts:
                for backend in order:
                    for name, bin_dir in bins.items():
                        cli = str(bin_dir / "migrate-cron")
                        got = bench_noop(backend, args.jobs, processes, work, (), cli, args.outcome)
                        results.setdefault((name, processes), {}).setdefault(backend, [])
                        results[(name, processes)][backend].append(got)
                        print(f"round {r + 1} {name} {processes}p {backend}: {got:,.0f}/s")
                        loads.append(os.getloadavg()[0])
    print(
        f"\n1-minute load average {min(loads):.1f}–{max(loads):.1f}; {args.jobs:,} jobs, "
        f"each ending {args.outcome}\n"
    )
    print("| checkout | processes | " + " | ".join(backends) + " | ratio to postgresql |")
    print("|---|---:|" + "---:|" * len(backends) + "---|")
    for (name, processes), by in results.items():
        cells = [
            f"{statistics.median(by[b]):,.0f} ({min(by[b]):,.0f}–{max(by[b]):,.0f})"
            for b in backends
        ]
        ratio = ""
        if "postgresql" in by:
            pg = by["postgresql"]
            ratio = "; ".join(
                f"{b} " + " / ".join(f"{x / y:.0%}" for x, y in zip(by[b], pg, strict=True))
                for b in backends
                if b != "postgresql"
            )
        print(f"| {name} | {processes} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()
