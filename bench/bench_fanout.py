"""Fan-out throughput: `migrate-cron enqueue KIND --stdin` (the installed command) fed N JSON
lines with 20 % repeated refs, on SQLite, PostgreSQL and MariaDB — the first feed (new jobs)
and the same feed again (every ref exists: the no-op a re-run producer gets). Writes its block
of the "## scheduler and enqueue" section of docs/benchmarks.md.

    python bench/bench_fanout.py [--lines 50000] [--backends sqlite,postgresql,mariadb]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_scheduler import MARIADB, PG, machine, write_block
from migrate_cron.store import open_store

CLI = str(Path(sys.executable).with_name("migrate-cron"))


def feed(lines: int, seed: int = 16) -> tuple[str, int]:
    """JSON lines, 20 % of them repeating an earlier ref; and how many refs are distinct."""
    rng = random.Random(seed)
    distinct = [f"order-{n}" for n in range(lines * 4 // 5)]
    refs = distinct + [rng.choice(distinct) for _ in range(lines - len(distinct))]
    rng.shuffle(refs)
    text = "".join(
        json.dumps({"ref": r, "payload": {"order": r, "total": 12.5}}) + "\n" for r in refs
    )
    return text, len(distinct)


def run(text: str, env: dict[str, str]) -> tuple[float, dict[str, int]]:
    t = time.perf_counter()
    res = subprocess.run(
        [CLI, "enqueue", "process-order", "--stdin", "--json"],
        input=text, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    elapsed = time.perf_counter() - t
    if res.returncode != 0:
        raise RuntimeError(f"exit {res.returncode}: {res.stderr.strip()}")
    return elapsed, json.loads(res.stdout)


def bench_backend(backend: str, text: str, distinct: int, tmp: Path) -> dict[str, float]:
    url = {"sqlite": f"sqlite:///{tmp}/bench.db", "postgresql": PG, "mariadb": MARIADB}[backend]
    prefix = f"f{uuid.uuid4().hex[:6]}_"
    store = open_store(url, prefix=prefix)
    store.create_schema()
    env = {**os.environ, "MIGRATE_CRON_DATABASE_URL": url, "MIGRATE_CRON_TABLE_PREFIX": prefix}
    try:
        first, out1 = run(text, env)
        again, out2 = run(text, env)
        if out1["created"] != distinct or out2["created"] != 0:
            raise RuntimeError(f"wrong counts: {out1} then {out2}")
        return {"lines": out1["lines"], "first": first, "again": again, "created": distinct}
    finally:
        store.drop_schema()
        store.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--backends", default="sqlite,postgresql,mariadb")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    text, distinct = feed(args.lines)
    results = {}
    for backend in [b for b in args.backends.split(",") if b]:
        try:
            results[backend] = bench_backend(backend, text, distinct, tmp)
        except Exception as exc:  # a server that is not running: report, keep the rest
            print(f"{backend}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
    lines = [
        f"### fan-out ({datetime.now(UTC):%Y-%m-%d}, {machine()})",
        "",
        f"`python bench/bench_fanout.py --lines {args.lines}`: one `migrate-cron enqueue "
        f"process-order --stdin` call fed {args.lines:,} JSON lines, 20 % of them repeating an "
        f"earlier ref ({distinct:,} distinct), 1,000 rows per insert-if-absent statement, each "
        "batch its own transaction; wall time of the whole command (process start included). "
        "Then the same feed again: every ref exists, nothing is added.",
        "",
        "| backend | first feed | new jobs/s | lines/s | same feed again | lines/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for backend, r in results.items():
        first, again = r["first"], r["again"]
        lines.append(
            f"| {backend} | {first:.2f} s | {r['created'] / first:,.0f} | "
            f"{r['lines'] / first:,.0f} | {again:.2f} s | {r['lines'] / again:,.0f} |"
        )
    text_out = "\n".join(lines) + "\n"
    print(text_out)
    if not args.no_write:
        write_block("bench_fanout", text_out)


if __name__ == "__main__":
    main()
