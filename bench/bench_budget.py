"""The worker's per-job cost budget: what one batch of N jobs costs the database, per part.

The real worker (``Worker`` from ``migrate_cron/worker/loop.py``, ``--once``, in this process,
a notifier built as the CLI builds it) runs N Python jobs on PostgreSQL, MariaDB and SQLite.
Each store operation the worker calls is tagged with the part it belongs to (claim, finish,
attempt history, …); SQLAlchemy's cursor events on the store's engine count, per part:

- statements: ``before_cursor_execute`` (one per statement text sent; an ``executemany`` is
  one statement);
- round trips: one per statement, except a MariaDB ``executemany`` of an UPDATE/DELETE, which
  PyMySQL sends one parameter set at a time (INSERTs are rewritten to one multi-row statement);
  plus one per COMMIT/ROLLBACK, plus one per BEGIN on PostgreSQL (psycopg sends it before the
  first statement; MariaDB's is implicit, SQLite's ``BEGIN IMMEDIATE`` is already a statement).
  SQLite's round trips are calls into the library, not network trips;
- rows written: ``cursor.rowcount`` after an INSERT/UPDATE/DELETE;
- bytes: ``len(repr(parameters))``, an approximation of what is sent besides the statement text.

Counts, not times: they are the same on a loaded machine. Settings: the defaults, except
``--batch N`` and a ``flush_interval`` long enough that the finisher writes the batch whole
(at defaults it writes every 5 ms, which splits a batch by timing). Parts the run does not
reach in a short batch (a heartbeat every 10 s, the output so far of a long run, the
``recovered`` notification check) are measured by calling the same store operation for the
batch's N jobs. Next to it: the raw loop of ``bench_peers.py`` (claim N with SKIP LOCKED,
one UPDATE done; PostgreSQL). Plus a cProfile (thread CPU time) of the worker per job.

    python bench/bench_budget.py [--jobs 100] [--profile-jobs 3000] [--json out.json]
                                 [--before before.json] [--no-doc]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy import event, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_worker import database
from benchdoc import machine, replace_section

from migrate_cron.notify.sender import Notifier
from migrate_cron.registry import Backoff, parse_registry
from migrate_cron.store import Store, open_store
from migrate_cron.store.timeouts import Use
from migrate_cron.worker.catalog import Catalog
from migrate_cron.worker.handlers import handler, unregister
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.loop import Worker
from migrate_cron.worker.settings import WorkerSettings

PREFIX = "bb_"
BACKENDS = ("postgresql", "mariadb", "sqlite")
#: The store operations the worker calls, and the part of the budget each one is.
PARTS = {
    "claim": "claim",
    "paused": "claim",
    "heartbeat": "heartbeat",
    "owned_jobs": "heartbeat",
    "complete": "finish",
    "fail": "finish",
    "fail_many": "finish",
    "release": "finish",
    "fenced_out": "finish",
    "_record_attempts": "attempt history",
    "_enqueue_next": "finish",
    "previous_outcome": "notification check",
    "listener": "wake-up/listen",
    "write_output": "output so far",
    "worker_started": "worker row",
    "worker_seen": "worker row",
    "worker_stopped": "worker row",
    "reap": "reaper",
    "acquire_lease": "reaper",
    "get": "start-up",
    "attempts_enabled": "start-up",
}
COLUMNS = ("statements", "begin_commit", "round_trips", "rows", "bytes")
#: Handlers: a no-op; one that prints (an output per job); one that fails (retried later).
VARIANTS = {
    "no-op": lambda payload, ctx: None,
    "output": lambda payload, ctx: f"ok {payload}",
    "fail": lambda payload, ctx: (_ for _ in ()).throw(RuntimeError("no")),
}


class Meter:
    """Counts what the engine sends, per part (a thread-local stack of the tagged calls)."""

    def __init__(self, store: Store) -> None:
        self.family = store.family
        self.local = threading.local()
        self.parts: dict[str, Counter[str]] = defaultdict(Counter)
        engine = store.engine
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)
        for name in ("begin", "commit", "rollback"):
            event.listen(engine, name, self._tx(name))

    def _current(self) -> Counter[str]:
        stack = getattr(self.local, "stack", None)
        return stack[-1] if stack else self.parts["other"]

    def _before(
        self, conn: Any, cursor: Any, statement: str, params: Any, ctx: Any, many: bool
    ) -> None:
        c = self._current()
        c["statements"] += 1
        verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else ""
        per_set = many and self.family == "mysql" and verb in ("UPDATE", "DELETE")
        c["round_trips"] += len(params) if per_set else 1
        c["bytes"] += len(repr(params))

    def _after(
        self, conn: Any, cursor: Any, statement: str, params: Any, ctx: Any, many: bool
    ) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else ""
        if verb in ("INSERT", "UPDATE", "DELETE", "WITH") and (cursor.rowcount or 0) > 0:
            self._current()["rows"] += cursor.rowcount

    def _tx(self, name: str) -> Callable[[Any], None]:
        def count(conn: Any) -> None:
            # On an autocommit connection (PostgreSQL's claim and finish) SQLAlchemy's events
            # fire, but psycopg sends nothing for them.
            if conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
                return
            c = self._current()
            if name == "begin":
                c["begin_commit"] += 1
                c["round_trips"] += 1 if self.family == "postgresql" else 0
            else:
                c["begin_commit"] += 1
                c["round_trips"] += 1

        return count

    def tag(self, store: Store) -> None:
        """Wrap the store's operations (on this instance only) so their statements land in
        their part; a claim that found nothing is ``claim (empty)``."""
        for name, part in PARTS.items():
            original = getattr(store, name, None)
            if original is not None:
                setattr(store, name, self._wrap(original, part))

    def _wrap(self, original: Callable[..., Any], part: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            stack = self.local.__dict__.setdefault("stack", [])
            stack.append(Counter())
            result = None
            try:
                result = original(*args, **kwargs)
                return result
            finally:
                counts = stack.pop()
                label = part
                if part == "claim" and original.__name__ == "claim" and not result:
                    label = "claim (empty)"
                self.parts[label].update(counts)
                self.parts[label]["calls"] += 1

        return call

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        stack = self.local.__dict__.setdefault("stack", [])
        stack.append(Counter())
        try:
            yield
        finally:
            counts = stack.pop()
            self.parts[name].update(counts)
            self.parts[name]["calls"] += 1


def open_fresh(url: str) -> Store:
    setup = open_store(url, prefix=PREFIX)
    setup.drop_schema()
    setup.create_schema()
    setup.dispose()
    return open_store(url, PREFIX, use=Use.LOOP)


def make_worker(store: Store, settings: WorkerSettings) -> Worker:
    """The worker as ``migrate-cron worker`` builds it (a notifier with no targets)."""
    reg = parse_registry({"jobs": {}}, "migrate-cron.toml")
    catalog = Catalog.build(reg, None, output_cap=settings.output_cap)
    log = WorkerLog(io.StringIO())
    note = Notifier(reg.notify, reg.jobs, log.event, store.previous_outcome)
    return Worker(store, catalog, settings, log=log, notifier=note)


def budget(backend: str, url: str, variant: str, jobs: int) -> dict[str, dict[str, int]]:
    """One batch of ``jobs`` through the real worker, and the parts it does not reach."""
    store = open_fresh(url)
    kind = f"budget-{variant}"
    try:
        store.enqueue_many(kind, list(range(jobs)))
        meter = Meter(store)
        meter.tag(store)
        settings = WorkerSettings(once=True, batch=jobs, flush_interval=30.0, flush_max=jobs)
        summary = make_worker(store, settings).run()
        # A failed job is retried after a random delay in [0, 2 h]: rarely within this run.
        assert summary.started >= jobs, summary
        if variant == "no-op":
            extra = open_store(url, PREFIX, use=Use.LOOP)
            extra_meter = Meter(extra)
            extra_meter.tag(extra)
            job = extra.tables.job
            with extra.transaction() as conn:  # hold the batch again, as a running batch is
                conn.execute(
                    job.update().values(state="running", locked_by="budget", locked_until=None)
                )
                ids = [
                    int(i) for i in conn.execute(job.select().with_only_columns(job.c.id)).scalars()
                ]
            extra.heartbeat("budget", ids, 30.0)
            extra.write_output("budget", {i: f"line {i}" for i in ids})
            with extra.transaction() as conn:
                conn.execute(job.update().values(state="done", finished_at=extra.now_sql()))
            for i in ids:
                extra.previous_outcome(i)
            for name in ("heartbeat", "output so far", "notification check"):
                meter.parts[f"{name} (N jobs, called)"] = extra_meter.parts.get(name, Counter())
            extra.dispose()
        return {k: dict(v) for k, v in meter.parts.items()}
    finally:
        store.dispose()


def raw_loop(url: str, jobs: int) -> dict[str, int]:
    """The two statements of ``bench_peers.py``'s raw loop (autocommit), counted the same way."""
    store = open_store(url, PREFIX)
    meter = Meter(store)
    try:
        with store.engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE IF EXISTS raw_budget")
            conn.exec_driver_sql(
                "CREATE TABLE raw_budget (id bigserial PRIMARY KEY, payload jsonb, "
                "state text NOT NULL DEFAULT 'open', locked_by text, started_at timestamptz, "
                "finished_at timestamptz, run_at timestamptz NOT NULL DEFAULT now())"
            )
            conn.execute(
                text(
                    "INSERT INTO raw_budget (payload) "
                    "SELECT 'null'::jsonb FROM generate_series(1, :n)"
                ),
                {"n": jobs},
            )
        conn = store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        with meter.part("raw loop"):
            ids = [
                r[0]
                for r in conn.execute(
                    text(
                        "UPDATE raw_budget SET state = 'running', locked_by = :me, "
                        "started_at = now() WHERE id IN (SELECT id FROM raw_budget WHERE "
                        "state = 'open' AND run_at <= now() ORDER BY run_at, id LIMIT :n "
                        "FOR UPDATE SKIP LOCKED) RETURNING id, payload"
                    ),
                    {"me": "raw-1", "n": jobs},
                )
            ]
            conn.execute(
                text(
                    "UPDATE raw_budget SET state = 'done', finished_at = now() "
                    "WHERE id = ANY(:ids) AND locked_by = :me AND state = 'running'"
                ),
                {"ids": ids, "me": "raw-1"},
            )
        conn.close()
        with store.engine.begin() as c:
            c.exec_driver_sql("DROP TABLE raw_budget")
        raw = dict(meter.parts["raw loop"])
        # AUTOCOMMIT: SQLAlchemy's begin/commit events fire, but psycopg sends nothing for them.
        raw["round_trips"] = raw["statements"]
        raw["begin_commit"] = 0
        return raw
    finally:
        store.dispose()


def profile(url: str, jobs: int) -> list[tuple[str, float, float]]:
    """Thread CPU time of every worker thread over ``jobs`` no-op jobs: (function, cumulative
    µs per job, share of the worker's CPU), the top 15 by cumulative time."""
    store = open_fresh(url)
    try:
        store.enqueue_many("budget-no-op", list(range(jobs)))
        worker = make_worker(store, WorkerSettings(once=True))  # the defaults, `worker --once`
        threads: list[tuple[threading.Thread, cProfile.Profile]] = []
        lock = threading.Lock()

        def start(*_: Any) -> None:
            prof = cProfile.Profile(time.thread_time)
            with lock:
                threads.append((threading.current_thread(), prof))
            prof.enable()

        threading.setprofile(start)
        main = cProfile.Profile(time.thread_time)
        main.enable()
        try:
            worker.run()
        finally:
            main.disable()
            threading.setprofile(None)  # type: ignore[arg-type]
        # A thread still running (the log's flusher) cannot be read: its open frames would be
        # closed on this thread's clock. Every thread of the worker itself has ended.
        profiles = [main, *(p for t, p in threads if not t.is_alive())]
        stats = pstats.Stats(profiles[0])
        for p in profiles[1:]:
            stats.add(p)
        total = stats.total_tt  # type: ignore[attr-defined]
        rows = []
        for (path, line, func), (_, _, _, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
            name = f"{Path(path).name}:{line}({func})" if line else func
            rows.append((name, cum / jobs * 1e6, cum / total if total else 0.0))
        rows.sort(key=lambda r: -r[1])
        top = [r for r in rows if "thread_time" not in r[0] and "profiler" not in r[0]][:15]
        top.insert(0, ("worker CPU, all threads", total / jobs * 1e6, 1.0))
        return top
    finally:
        store.dispose()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"jobs": args.jobs, "budgets": {}, "raw": None, "profile": None}
    for backend in args.backends.split(","):
        for variant in args.variants.split(","):
            kind = f"budget-{variant}"
            handler(kind, backoff=Backoff(base=3600, cap=3600))(VARIANTS[variant])
            try:
                with database(backend) as url:
                    parts = budget(backend, url, variant, args.jobs)
            finally:
                unregister(kind)
            result["budgets"][f"{backend} {variant}"] = parts
            print(backend, variant, json.dumps(parts), flush=True)
    handler("budget-no-op")(VARIANTS["no-op"])
    try:
        with database("postgresql") as url:
            result["raw"] = raw_loop(url, args.jobs)
            if args.profile_jobs:
                result["profile"] = profile(url, args.profile_jobs)
    finally:
        unregister("budget-no-op")
    return result


ORDER = (
    "claim",
    "claim (empty)",
    "finish",
    "attempt history",
    "notification check",
    "wake-up/listen",
    "worker row",
    "reaper",
    "start-up",
    "other",
)


def table(parts: dict[str, dict[str, int]], jobs: int) -> list[str]:
    lines = [
        "| part | calls | statements | BEGIN/COMMIT | round trips | rows written | bytes sent |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    total: Counter[str] = Counter()
    for name in [*ORDER, *sorted(k for k in parts if k not in ORDER)]:
        c = parts.get(name)
        if not c:
            continue
        if "(N jobs, called)" not in name:
            total.update({k: v for k, v in c.items() if k != "calls"})
        lines.append(
            f"| {name} | {c.get('calls', 0)} | "
            + " | ".join(f"{c.get(k, 0):,}" for k in COLUMNS)
            + " |"
        )
    lines.append(
        "| **worker run, total** | | " + " | ".join(f"**{total[k]:,}**" for k in COLUMNS) + " |"
    )
    lines.append(
        f"| per job (÷ {jobs}) | | " + " | ".join(f"{total[k] / jobs:.2f}" for k in COLUMNS) + " |"
    )
    return lines


def section(after: dict[str, Any], before: dict[str, Any] | None) -> str:
    jobs = after["jobs"]
    out = [
        "## per-job cost budget (issue 34)",
        "",
        f"`python bench/bench_budget.py --jobs {jobs}` on {date.today()}, {machine()}. "
        "Counts, not times (they do not move with the machine's load). The real worker "
        "(`Worker`, `--once`, defaults except `--batch N` and a finisher that writes the "
        "batch whole) runs one batch of N Python jobs; every store operation it calls is "
        "tagged with its part and SQLAlchemy's cursor events on the engine count what is "
        "sent. Statements: one per `before_cursor_execute` (an executemany is one). Round "
        "trips: one per statement (a MariaDB executemany of an UPDATE is one per row: "
        "PyMySQL sends them one by one), one per COMMIT, and one per BEGIN on PostgreSQL "
        "(psycopg sends it before the first statement; MariaDB's is implicit, SQLite's "
        "`BEGIN IMMEDIATE` is counted as a statement; SQLite's trips are library calls). "
        "Rows written: `cursor.rowcount` of INSERT/UPDATE/DELETE. Bytes: `len(repr(params))`, "
        "the parameters only. `claim (empty)`: the `--once` loop asking again while the batch "
        "is being written (how often is timing; read per-job figures from the other rows). "
        "Rows `(N jobs, called)`: parts a short batch does not reach (a heartbeat comes every "
        "10 s, the output so far of a long run, the `recovered` check of a kind that notifies "
        "on it), measured by calling the same operation for the batch's N jobs; not in the "
        "total. The start of a job is in the claim (its UPDATE sets `started_at`): it has no "
        "statement of its own.",
        "",
    ]
    raw = after.get("raw")
    if raw:
        out += [
            f"The raw loop of `bench_peers.py` (PostgreSQL, autocommit, N = {jobs}): "
            f"{raw.get('statements', 0)} statements, {raw.get('round_trips', 0)} round trips, "
            f"{raw.get('rows', 0):,} rows written, {raw.get('bytes', 0):,} bytes of parameters "
            f"— {raw.get('statements', 0) / jobs:.2f} statements per job.",
            "",
        ]
    for label, data in (("before", before), ("after", after)):
        if not data:
            continue
        out += [f"### {label}", ""]
        if data.get("note"):
            out += [data["note"], ""]
        for name, parts in data["budgets"].items():
            out += [f"**{name}**, N = {data['jobs']}:", "", *table(parts, data["jobs"]), ""]
    for label, data in (("before", before), ("after", after)):
        prof = data.get("profile") if data else None
        if not prof:
            continue
        out += [
            f"Profile ({label}): cProfile with thread CPU time in every worker thread, "
            f"PostgreSQL, `worker --once` defaults, no-op handler; cumulative CPU µs per job "
            "(relative shares are what to read: the machine is shared), top 15:",
            "",
            "| function | µs per job | share |",
            "|---|---:|---:|",
        ]
        out += [f"| `{n}` | {us:.0f} | {share:.0%} |" for n, us, share in prof]
        out.append("")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--profile-jobs", type=int, default=3000)
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--json", type=Path)
    p.add_argument("--before", type=Path, help="a --json file of the run before the change")
    p.add_argument("--no-doc", action="store_true")
    args = p.parse_args()
    result = measure(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    before = json.loads(args.before.read_text()) if args.before else None
    if not args.no_doc:
        replace_section("per-job cost budget (issue 34)", section(result, before))


if __name__ == "__main__":
    main()
