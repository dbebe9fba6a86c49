"""Wall time of one `migrate-cron enqueue NAME --slot X` call (the installed command, as cron
runs it every minute on every host), on SQLite, PostgreSQL and MariaDB: a new slot, and the
same slot again (the no-op every other host gets). Next to `migrate-cron --version`, the floor
of starting Python and the CLI. Writes its block of the "## scheduler and enqueue" section of
docs/benchmarks.md.

    python bench/bench_enqueue.py [--calls 15] [--backends sqlite,postgresql,mariadb]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_scheduler import MARIADB, PG, machine, write_block
from migrate_cron.store import open_store

CLI = str(Path(sys.executable).with_name("migrate-cron"))
REGISTRY = '[jobs.invoices]\nschedule = "*/5 * * * *"\ncommand = "true"\n'


def timed(args: list[str], env: dict[str, str], expect: int = 0) -> float:
    t = time.perf_counter()
    res = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - t
    if res.returncode != expect:
        raise RuntimeError(f"{args}: exit {res.returncode}: {res.stderr.strip()}")
    return elapsed


def stats(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def bench_backend(backend: str, calls: int, tmp: Path) -> dict[str, tuple[float, float]]:
    url = {"sqlite": f"sqlite:///{tmp}/bench.db", "postgresql": PG, "mariadb": MARIADB}[backend]
    prefix = f"e{uuid.uuid4().hex[:6]}_"
    store = open_store(url, prefix=prefix)
    store.create_schema()
    env = {
        **os.environ,
        "MIGRATE_CRON_DATABASE_URL": url,
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
        "MIGRATE_CRON_REGISTRY": str(tmp / "migrate-cron.toml"),
    }
    try:
        base = datetime(2026, 1, 1, tzinfo=UTC)
        timed(["enqueue", "invoices", "--slot", base.isoformat()], env)  # warm the OS caches
        new = [
            timed(
                ["enqueue", "invoices", "--slot", (base + timedelta(minutes=5 * i)).isoformat()],
                env,
            )
            for i in range(1, calls + 1)
        ]
        same = [
            timed(["enqueue", "invoices", "--slot", base.isoformat()], env) for _ in range(calls)
        ]
        auto = [timed(["enqueue", "invoices"], env) for _ in range(calls)]
        assert len(store.list_jobs(kind="invoices", limit=10_000)) <= 2 * calls + 2
        return {"new": stats(new), "same": stats(same), "auto": stats(auto)}
    finally:
        store.drop_schema()
        store.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--backends", default="sqlite,postgresql,mariadb")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    (tmp / "migrate-cron.toml").write_text(REGISTRY)
    env = dict(os.environ)
    floor = stats([timed(["--version"], env) for _ in range(args.calls)])
    env_reg = {**env, "MIGRATE_CRON_REGISTRY": str(tmp / "migrate-cron.toml")}
    unknown = stats([timed(["enqueue", "nope"], env_reg, expect=1) for _ in range(args.calls)])
    results = {}
    for backend in [b for b in args.backends.split(",") if b]:
        try:
            results[backend] = bench_backend(backend, args.calls, tmp)
        except Exception as exc:  # a server that is not running: report, keep the rest
            print(f"{backend}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
    lines = [
        f"### enqueue ({datetime.now(UTC):%Y-%m-%d}, {machine()})",
        "",
        f"`python bench/bench_enqueue.py`: wall time of the installed command per call, median "
        f"/ p95 of {args.calls} calls each (process start, registry, schedule, connect, one "
        "transaction). `migrate-cron --version` (Python + CLI start-up, no database): "
        f"{floor[0]:.0f} / {floor[1]:.0f} ms; `migrate-cron enqueue UNKNOWN` (a subcommand, the "
        "registry, no database or SQLAlchemy import): "
        f"{unknown[0]:.0f} / {unknown[1]:.0f} ms. The rest of a call is mostly importing "
        "SQLAlchemy.",
        "",
        "| backend | new slot | same slot again (no-op) | `--slot auto` |",
        "|---|---:|---:|---:|",
    ]
    for backend, r in results.items():
        cells = " | ".join(f"{r[k][0]:.0f} / {r[k][1]:.0f} ms" for k in ("new", "same", "auto"))
        lines.append(f"| {backend} | {cells} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_block("bench_enqueue", text)


if __name__ == "__main__":
    main()
