"""How long the dashboard's pages take to load on a 1M-row queue on PostgreSQL (issue #17's
target: the overview within 300 ms).

The same data as ``bench_status.py`` (1M done rows over 7 days in 10 kinds, 1,000 open, 50
running, 20 failed, 100k scheduled_runs rows), then the installed ``migrate-cron web`` on a
free port, and whole HTTP requests to it (server and template time; no browser rendering).
Writes the "## web" section of docs/benchmarks.md.

    python bench/bench_web.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_status import PG, fill, machine, server_db
from benchdoc import replace_section

from migrate_cron.store import open_store

REPEAT = 15
PAGES = ("/", "/?window=24h", "/failed", "/workers", "/schedules")
START_TIMEOUT = 30.0


def command() -> str:
    found = Path(sys.executable).with_name("migrate-cron")
    return str(found) if found.exists() else (shutil.which("migrate-cron") or "migrate-cron")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> float:
    """Milliseconds for one whole GET (connect, server, template, body read)."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as reply:
        reply.read()
        assert reply.status == 200, (url, reply.status)
    return (time.perf_counter() - t0) * 1000


def timed(url: str) -> tuple[float, float]:
    get(url)  # warm-up: the first request opens the pool's connection
    samples = [get(url) for _ in range(REPEAT)]
    return statistics.median(samples), min(samples)


def bench(rows: int) -> dict[str, object]:
    load = os.getloadavg()[0]
    url, drop = server_db(PG)
    prefix = f"bweb_{uuid.uuid4().hex[:6]}_"
    store = open_store(url, prefix=prefix)
    store.create_schema()
    proc: subprocess.Popen[bytes] | None = None
    try:
        fill(store, rows, store.db_now())
        port = free_port()
        env = {**os.environ, "MIGRATE_CRON_DATABASE_URL": url, "MIGRATE_CRON_TABLE_PREFIX": prefix}
        with tempfile.TemporaryDirectory() as cwd:  # no migrate-cron.toml: no registry
            proc = subprocess.Popen(
                [command(), "web", "--port", str(port), "--refresh", "0"], cwd=cwd, env=env
            )
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                try:
                    get(f"{base}/healthz")
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("migrate-cron web did not start") from None
                    time.sleep(0.1)
            times = {page: timed(base + page) for page in PAGES}
        return {"load": load, "rows": rows, "pages": times}
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        store.drop_schema()
        store.dispose()
        drop()  # type: ignore[operator]


def write_section(result: dict[str, object]) -> str:
    times: dict[str, tuple[float, float]] = result["pages"]  # type: ignore[assignment]
    lines = [
        "## web",
        "",
        f"`python bench/bench_web.py` on {datetime.now(UTC):%Y-%m-%d}, {machine()}; "
        f"1-minute load average {result['load']:.1f} at the start.",
        f"PostgreSQL, the `status` data above ({result['rows']:,} done rows over 7 days, 1,000 "
        "open, 50 running, 20 failed, 100k scheduled_runs rows). The installed `migrate-cron "
        "web` (uvicorn, one process), whole HTTP GETs from the same machine: server, queries "
        f"and template, no browser rendering. Median / best of {REPEAT} after a warm-up, ms. "
        "Target (#17): the overview within 300 ms.",
        "",
        "| page | median / best |",
        "|---|---:|",
    ]
    for page, (median, best) in times.items():
        lines.append(f"| `{page}` | {median:.0f} / {best:.0f} |")
    lines += [
        "",
        "The overview runs `Store.status` over its window (1h by default, `--window` or "
        "`?window=` for another): the 24h figure is the cost of ranking a day of done rows for "
        "p50/p95, as in `status --since 24h`.",
        "",
    ]
    section = "\n".join(lines)
    replace_section("web", section)
    return section


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    result = bench(args.rows)
    print(result, flush=True)
    print(write_section(result))


if __name__ == "__main__":
    main()
