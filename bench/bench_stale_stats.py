"""The claim and the finish of a batch when PostgreSQL's statistics predate a backlog.

Per case ``DONE:BACKLOG``: a fresh job table with DONE finished rows, ``ANALYZE``, autovacuum
off for the table (so the statistics stay as they were), then BACKLOG jobs enqueued; then
``--calls`` times, single-threaded, a claim of ``--batch`` jobs and their finish with their
runs (``Store.claim`` and ``Store.complete``, the worker's two statements). Prints the ms of
each call, and the plan PostgreSQL chose for the last finish. ``--baseline DIR`` runs the same
in another checkout (its ``migrate_cron`` first on ``sys.path``), interleaved case by case.

    python bench/bench_stale_stats.py [--cases 100000:200000,1000:100000,5000:100000]
        [--batch 100] [--calls 10] [--baseline /path/to/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

PG = os.environ.get("MIGRATE_CRON_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
PREFIX = "bss_"

CHILD = """
import json, sys, time
sys.path.insert(0, {path!r})
from datetime import UTC, datetime
from sqlalchemy import event
from migrate_cron.store import open_store
from migrate_cron.store.models import AttemptRun

store = open_store({url!r}, prefix={prefix!r})
store.drop_schema()
store.create_schema()
job = store.tables.job.name
with store.engine.begin() as conn:
    conn.exec_driver_sql(
        f"INSERT INTO {{job}} (kind, state, attempts, max_attempts, run_at, created_at, "
        "started_at, finished_at) SELECT 'k', 'done', 1, 5, now(), now(), now(), now() "
        "FROM generate_series(1, {done})"
    )
    conn.exec_driver_sql(f"ANALYZE {{job}}")
    conn.exec_driver_sql(f"ALTER TABLE {{job}} SET (autovacuum_enabled = false)")
for start in range(0, {backlog}, 10000):
    store.enqueue_many("k", [None] * min(10000, {backlog} - start))
sent = []
event.listen(store.engine, "before_cursor_execute",
             lambda c, cur, stmt, params, ctx, many: sent.append((stmt, params)))
claims, finishes = [], []
for _ in range({calls}):
    t0 = time.perf_counter()
    jobs = store.claim("bench", {batch}, 60.0, ["k"])
    t1 = time.perf_counter()
    now = datetime.now(UTC)
    runs = {{j.id: AttemptRun(now, now, 0, None, None, j.run_at) for j in jobs}}
    del sent[:]
    t2 = time.perf_counter()
    written = store.complete("bench", list(runs), runs=runs,
                             attempts={{j.id: j.attempts for j in jobs}})
    t3 = time.perf_counter()
    assert written == len(jobs) == {batch}, (written, len(jobs))
    claims.append(round((t1 - t0) * 1e3, 1))
    finishes.append(round((t3 - t2) * 1e3, 1))
statement, params = [s for s in sent if "UPDATE" in s[0]][-1]
with store.engine.begin() as conn:
    plan = [r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params)]
    conn.rollback()
store.drop_schema()
store.dispose()
print(json.dumps({{"claim": claims, "finish": finishes, "plan": plan}}))
"""


def run_case(path: Path, done: int, backlog: int, batch: int, calls: int) -> dict[str, object]:
    code = CHILD.format(
        path=str(path), url=PG, prefix=PREFIX, done=done, backlog=backlog, batch=batch,
        calls=calls,
    )  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=900, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"case {done}:{backlog} failed: {out.stderr[-2000:]}")
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def cases(text: str) -> list[tuple[int, int]]:
    """``--cases``: ``DONE:BACKLOG`` pairs of positive whole numbers, comma-separated."""
    out = []
    for case in text.split(","):
        done, _, backlog = case.partition(":")
        if not (done.isdigit() and backlog.isdigit() and int(done) > 0 and int(backlog) > 0):
            raise argparse.ArgumentTypeError(f"{case!r} is not DONE:BACKLOG (e.g. 1000:100000)")
        out.append((int(done), int(backlog)))
    return out


def scan_of_job(plan: list[str]) -> str:
    """The plan line that reads the job table for the finish's UPDATE."""
    for line in plan:
        if f"on {PREFIX}job " in line and "Update" not in line and "Scan" in line:
            return line.strip().lstrip("-> ").split("  (")[0]
    return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=cases, default="100000:200000,1000:100000,5000:100000")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--baseline", type=Path, help="another checkout (its root)")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    checkouts = [("this", here)] + ([("base", args.baseline.resolve())] if args.baseline else [])
    for done, backlog in args.cases:
        for name, path in checkouts:
            r = run_case(path, done, backlog, args.batch, args.calls)
            print(
                f"{name} {done:,} done -> {backlog:,} waiting: claim {r['claim']} ms | "
                f"finish {r['finish']} ms | finish reads the job table by: "
                f"{scan_of_job(r['plan'])}",  # type: ignore[arg-type]
                flush=True,
            )


if __name__ == "__main__":
    main()
