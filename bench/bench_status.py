"""How long `migrate-cron status` takes on a big table, and how long the query would take if it
counted every row (the old ``Store.stats``), on PostgreSQL (required), MariaDB and SQLite.

Data: 1M done rows over 7 days (the default retention) in 10 kinds, 1,000 open (100 ready),
50 running, 20 failed, 100k scheduled_runs rows for 20 jobs. Status windows 24h and 1h.
Writes the results to the "## status" section of docs/benchmarks.md.

    python bench/bench_status.py [--rows 1000000] [--backends postgresql,mariadb,sqlite]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchdoc import machine, replace_section

from migrate_cron.store import Store, open_store

PG = os.environ.get("MIGRATE_CRON_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MARIADB = os.environ.get(
    "MIGRATE_CRON_TEST_MARIADB_URL", "mariadb+pymysql://root@127.0.0.1:3306/test"
)
REPEAT = 7


def fill(store: Store, rows: int, now: datetime) -> None:
    """Bulk test data with each dialect's own row generator (not a store operation)."""
    job, runs = store.tables.job.name, store.tables.scheduled_runs.name
    span = 7 * 86400 / rows  # seconds between finished_at values
    family = store.family
    if family == "postgresql":
        gen = lambda n: f"generate_series(1, {n}) AS g(i)"  # noqa: E731
        ts = lambda expr: f"(CAST(:now AS timestamptz) - ({expr}) * interval '1 second')"  # noqa: E731
    elif family == "mysql":
        gen = lambda n: f"(SELECT seq AS i FROM seq_1_to_{n}) AS g"  # noqa: E731
        ts = lambda expr: f"TIMESTAMPADD(MICROSECOND, -ROUND(({expr}) * 1000000), :now)"  # noqa: E731
    else:
        gen = lambda n: (  # noqa: E731
            f"(WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n})"
            " SELECT i FROM c) AS g"
        )
        ts = lambda expr: (  # noqa: E731
            f"strftime('%Y-%m-%d %H:%M:%f000', :now, printf('%+.3f seconds', -({expr})))"
        )
    kind = "'kind' || (i % 10)" if family != "mysql" else "CONCAT('kind', i % 10)"
    now_param = {"now": now if family == "postgresql" else now.replace(tzinfo=None)}
    if family == "sqlite":
        now_param = {"now": now.strftime("%Y-%m-%d %H:%M:%S")}
    with store.engine.begin() as conn:
        conn.execute(
            text(
                f"INSERT INTO {job} (kind, state, attempts, max_attempts, run_at, created_at,"
                " started_at, finished_at)"
                f" SELECT {kind}, 'done', 1, 5, {ts(f'i * {span} + 3')}, {ts(f'i * {span} + 3')},"
                f" {ts(f'i * {span} + 1 + (i % 7)')}, {ts(f'i * {span}')} FROM {gen(rows)}"
            ),
            now_param,
        )
        for state, n, offset in (
            ("open", 900, "-600"),
            ("open", 100, "60"),
            ("running", 50, "30"),
            ("failed", 20, "3600"),
        ):
            conn.execute(
                text(
                    f"INSERT INTO {job} (kind, state, attempts, max_attempts, run_at, created_at,"
                    " started_at, finished_at)"
                    f" SELECT {kind}, '{state}', 1, 5, {ts(offset)}, {ts('7200')}, NULL,"
                    f" {ts('60') if state == 'failed' else 'NULL'} FROM {gen(n)}"
                ),
                now_param,
            )
        name = "'job' || (i % 20)" if family != "mysql" else "CONCAT('job', i % 20)"
        conn.execute(
            text(
                f"INSERT INTO {runs} (job_name, scheduled_for, enqueued_at, outcome)"
                f" SELECT {name}, {ts('i * 60')}, {ts('i * 60')}, 'enqueued' FROM {gen(100_000)}"
            ),
            now_param,
        )
    with store.engine.begin() as conn:
        if family == "postgresql":
            conn.execute(text(f"ANALYZE {job}"))
            conn.execute(text(f"ANALYZE {runs}"))
        elif family == "mysql":
            conn.execute(text(f"ANALYZE TABLE {job}, {runs}"))
        else:
            conn.execute(text("ANALYZE"))


def timed(fn: object) -> tuple[float, float]:
    """(median, best) wall time of REPEAT calls after one warm-up, in milliseconds. The best
    run is what the query costs; the median adds whatever else the machine was doing."""
    fn()  # type: ignore[operator]
    samples = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples), min(samples)


def bench(name: str, url: str, rows: int) -> dict[str, object]:
    load = os.getloadavg()[0]
    prefix = f"bench_{uuid.uuid4().hex[:6]}_"
    store = open_store(url, prefix=prefix)
    store.create_schema()
    try:
        now = store.db_now()
        t0 = time.perf_counter()
        fill(store, rows, now)
        fill_s = time.perf_counter() - t0
        status = store.status(now - timedelta(hours=24))
        done_24h = sum(k.done for k in status.kinds)
        return {
            "load": load,
            "backend": name,
            "rows": rows,
            "fill_s": fill_s,
            "done_24h": done_24h,
            "status_24h": timed(lambda: store.status(store.db_now() - timedelta(hours=24))),
            "status_1h": timed(lambda: store.status(store.db_now() - timedelta(hours=1))),
            "stats_all": timed(store.stats),
        }
    finally:
        store.drop_schema()
        store.dispose()


def server_db(base: str) -> tuple[str, object]:
    from sqlalchemy.engine import make_url

    url = make_url(base)
    dbname = f"mcb_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {dbname}"))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {dbname}"))
        admin.dispose()

    return url.set(database=dbname).render_as_string(hide_password=False), drop


def write_section(results: list[dict[str, object]]) -> str:
    lines = [
        "## status",
        "",
        f"`python bench/bench_status.py` on {datetime.now(UTC):%Y-%m-%d}, {machine()}.",
        "Data: done rows spread over 7 days (the default retention) in 10 kinds, 1,000 open "
        "(100 ready), 50 running, 20 failed, 100k scheduled_runs rows for 20 jobs. Median of "
        f"{REPEAT} runs after a warm-up. `status` = `Store.status` (all its statements, one "
        "read transaction); `count all rows` = the old `Store.stats`, which groups every row "
        "and is what status would cost without the windowed, index-bounded queries.",
        "",
        "Times are median / best in ms; `load` is the 1-minute load average when the backend's "
        "run started (other engineers' test suites share the machine).",
        "",
        "| backend | done rows | done in 24h window | status --since 24h | status --since 1h "
        "| count all rows | load |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def ms(pair: object) -> str:
        median, best = pair  # type: ignore[misc]
        return f"{median:.0f} / {best:.0f}"

    for r in results:
        lines.append(
            f"| {r['backend']} | {r['rows']:,} | {r['done_24h']:,} | {ms(r['status_24h'])} "
            f"| {ms(r['status_1h'])} | {ms(r['stats_all'])} | {r['load']:.1f} |"
        )
    lines += [
        "",
        "The 24h figure is dominated by ranking the window's ~143k done rows for p50/p95; the "
        "1h figure (~6k rows in the window) is close to the fixed cost of the live counts, the "
        "last success/failure probes and the slot lookups. `migrate-cron metrics` uses a 1h "
        "window by default.",
        "",
    ]
    section = "\n".join(lines)
    replace_section("status", section)
    return section


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--backends", default="postgresql,mariadb,sqlite")
    args = parser.parse_args()
    results = []
    for name in args.backends.split(","):
        if name == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                results.append(bench(name, f"sqlite:///{tmp}/bench.db", args.rows))
        else:
            url, drop = server_db(PG if name == "postgresql" else MARIADB)
            try:
                results.append(bench(name, url, args.rows))
            finally:
                drop()  # type: ignore[operator]
        print(results[-1], flush=True)
    print(write_section(results))


if __name__ == "__main__":
    main()
