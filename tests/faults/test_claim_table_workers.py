"""``worker --table``: four installed ``migrate-cron worker --table orders`` processes claim an
application's own table, on SQLite, PostgreSQL and MariaDB.

The command itself counts: each run appends "key worker-pid" to a file with one short
``printf >>`` (one O_APPEND write, so a SIGKILL leaves the whole record or none).

- Plain: 5,000 pending rows, no fault — every row is processed exactly once and ends ``done``.
- SIGKILL chaos, as in ``test_killed_workers.py``: kill a worker that holds rows (its whole
  process group, commands included), start another, repeat — every row still runs at least
  once, none is left ``processing`` once the reaper has run, and every repeated run was
  started by a worker we killed. Fewer rows (each run sleeps a little so kills land mid-run).

Both check that claiming changes nothing else: the other columns of every row and the rows
that were never ready (``shipped``) are as they were.
"""

from __future__ import annotations

import contextlib
import os
import random
import shlex
import signal
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from sqlalchemy import Engine, Table, column, create_engine, func, select

from migrate_cron.store.dialects import normalize_url
from tests.faults.orders import (
    DONE,
    PENDING,
    PROCESSING,
    SHIPPED,
    apply_claim_revision,
    create_orders,
    fingerprint,
    registry_text,
    status_counts,
    table_spec,
)
from tests.faults.procs import Fleet, Proc, cli_env, pacing, read_results, wait_for

WORKERS = 4
CONCURRENCY = 4
BATCH = 8
CAPACITY = CONCURRENCY + BATCH
HELD = 2 * CAPACITY  # see test_killed_workers.py: what a killed worker may have held
UNTOUCHED = 300
WORKER_ARGS = [
    "worker",
    "--table",
    "orders",
    "--concurrency",
    str(CONCURRENCY),
    "--batch",
    str(BATCH),
    "--heartbeat",
    "0.5",
    "--lease",
    "4",
    "--poll",
    "0.2",
    "--grace",
    "5",
]


def _setup(
    db_url: str, table_prefix: str, tmp_path: Path, pending: int, sleep: str = ""
) -> tuple[Engine, Table, Path, Path, dict[str, str]]:
    name = f"{table_prefix}orders"
    results = tmp_path / "runs.txt"
    command = f'printf "%s %s\\n" "$MIGRATE_CRON_ROW_KEY" "$PPID" >> {shlex.quote(str(results))}'
    if sleep:
        command += f"; sleep {sleep}"
    body = registry_text("orders", name, command, max_attempts=100, batch=BATCH, lease=4)
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(body)
    engine = create_engine(normalize_url(db_url))
    table = create_orders(engine, name, pending, UNTOUCHED)
    apply_claim_revision(db_url, table_spec(body), tmp_path)
    env = cli_env(db_url, "", registry)
    return engine, table, registry, results, env


def _holding(engine: Engine, table: Table, pid: int) -> int:
    """Rows the worker ``pid`` holds as processing (``locked_by`` is host:pid:random)."""
    locked_by = column("locked_by")  # added by the revision, not in the app's Table
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(table)
                .where(table.c.status == PROCESSING, locked_by.like(f"%:{pid}:%"))
            ).scalar_one()
        )


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields and int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _kill_with_commands(victim: Proc) -> None:
    """SIGKILL a worker and the commands it runs, as a crashed host would.

    Commands run in their own session (a timeout kills their whole group), so killing the
    worker's group alone would leave them running as orphans that finish the row later. The
    worker is stopped first so it starts no command while we look."""
    victim.signal(signal.SIGSTOP)
    for child in _children(victim.pid):
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(child, signal.SIGKILL)
    victim.signal(signal.SIGKILL)


def _ready(proc: Proc) -> bool:
    return "worker-start" in proc.output()


def _left(engine: Engine, table: Table) -> int:
    counts = status_counts(engine, table)
    return counts.get(PENDING, 0) + counts.get(PROCESSING, 0)


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_four_workers_process_5000_rows_of_an_orders_table_exactly_once(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    rows = 5000
    engine, table, registry, results, env = _setup(db_url, table_prefix, tmp_path, rows)
    try:
        before = fingerprint(engine, table)
        t0 = time.monotonic()
        with Fleet(tmp_path) as fleet:
            workers = [
                fleet.start([*WORKER_ARGS, "--once"], env, label="worker", cwd=registry.parent)
                for _ in range(WORKERS)
            ]
            for w in workers:
                assert w.wait(120) == 0, w.output()[-2000:]
        seconds = time.monotonic() - t0
        runs = read_results(results)
        per_row = Counter(key for key, _ in runs)
        pids = Counter(pid for _, pid in runs)
        print(
            f"{engine.dialect.name}: {rows} rows by {len(pids)} workers in {seconds:.1f}s "
            f"({rows / seconds:.0f} rows/s), runs per worker {sorted(pids.values())}"
        )
        assert len(runs) == rows
        assert set(per_row) == set(range(1, rows + 1))
        assert max(per_row.values()) == 1
        assert len(pids) >= 2, "one worker took every row: no concurrency was tested"
        assert status_counts(engine, table) == {DONE: rows, SHIPPED: UNTOUCHED}
        assert fingerprint(engine, table) == before
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()


@pytest.mark.slow
@pytest.mark.timeout(170)
def test_sigkilled_table_workers_lose_no_row_and_leave_none_processing(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    rows, min_kills = 1500, 10
    engine, table, registry, results, env = _setup(
        db_url, table_prefix, tmp_path, rows, sleep="0.05"
    )
    try:
        before = fingerprint(engine, table)
        killed: set[int] = set()
        kills_holding = 0
        t0 = time.monotonic()
        with Fleet(tmp_path) as fleet:
            workers = [
                fleet.start(WORKER_ARGS, env, label="worker", cwd=registry.parent)
                for _ in range(WORKERS)
            ]
            while kills_holding < min_kills and _left(engine, table):
                up = wait_for(
                    lambda: [w for w in workers if w.alive() and _ready(w)], 60, "a worker up"
                )
                working = [w for w in up if _holding(engine, table, w.pid)]
                if not working:
                    pacing(0.05, 0.1)
                    continue
                victim = random.choice(working)
                _kill_with_commands(victim)
                victim.wait(10)
                killed.add(victim.pid)
                kills_holding += _holding(engine, table, victim.pid) > 0
                workers.remove(victim)
                workers.append(fleet.start(WORKER_ARGS, env, label="worker", cwd=registry.parent))
                pacing(0.2, 0.5)
            chaos = time.monotonic() - t0
            # The killed workers' rows stay processing until their lease (4 s) expires and a
            # living worker's reaper returns them; then they run again.
            wait_for(lambda: _left(engine, table) == 0, 120, "every row done", interval=0.2)
            for w in workers:
                w.signal(signal.SIGTERM)
            for w in workers:
                assert w.wait(30) == 0, w.output()[-2000:]
        runs = read_results(results)
        per_row = Counter(key for key, _ in runs)
        extra = sum(n - 1 for n in per_row.values())
        print(
            f"{engine.dialect.name}: {rows} rows, {len(killed)} kills ({kills_holding} holding "
            f"rows) in {chaos:.1f}s, {len(runs)} runs, {extra} extra (bound "
            f"{len(killed) * HELD}), total {time.monotonic() - t0:.1f}s"
        )
        assert kills_holding >= 1, "no kill hit a worker holding rows"
        assert set(per_row) == set(range(1, rows + 1))  # every row at least once
        assert status_counts(engine, table) == {DONE: rows, SHIPPED: UNTOUCHED}
        assert extra <= len(killed) * HELD
        by_row: dict[int, list[int]] = defaultdict(list)
        for key, pid in runs:
            by_row[key].append(pid)
        for key, pids in by_row.items():
            assert all(pid in killed for pid in pids[:-1]), (
                f"row {key} ran {len(pids)} times; an earlier run was by a living worker: {pids}"
            )
        assert fingerprint(engine, table) == before
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()
