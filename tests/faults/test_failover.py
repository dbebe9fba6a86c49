"""A PostgreSQL failover under load: a primary and a streaming replica of this test's own
(``pg_basebackup -R``), every process on the libpq host list of both with
``target_session_attrs=read-write``. While two workers run jobs, the scheduler fires an
every-minute job on a compressed clock and cron runs the migrated ``enqueue`` line once per
slot (real processes, the crontab line ``migrate`` writes), the primary is killed
(``pg_ctl stop -m immediate``) and the replica promoted.

Each process works again on the new primary within 10 s of the promotion (measured per
process: a worker has said "the database answers again" and started a job since, the scheduler
has written a slot newer than any before the kill, a cron call has succeeded, both workers
LISTEN there). What may be lost or run twice depends on the replication:

- synchronous (``synchronous_standby_names = '*'``, ``synchronous_commit = on``): a commit
  returns only once the replica has it, so nothing acknowledged is lost and nothing runs twice;
- asynchronous: what the primary committed and the replica had not received is gone. The test
  holds the replica's WAL stream back until work was acknowledged meanwhile (a replica that
  lags), then fails over: cron slots acknowledged in that window are lost, jobs whose outcome
  or claim was in it run again — and nothing else (docs/reliability.md states the rule).
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.migration.target import Target, cron_url
from migrate_cron.producer.spool import Spool
from migrate_cron.store import Store, open_store
from tests.conftest import IN_CI, cli_path, run_cli
from tests.faults.pgserver import ReplicatedPostgres, primary_and_replica, server_bin_dir
from tests.faults.procs import (
    Fleet,
    Proc,
    chaos_registry,
    cli_env,
    wait_for,
    write_handler_project,
)

RECOVERY_BOUND = 10.0  # seconds from the promotion to "each process works again"
JOBS = 400
#: The chaos jobs and the scheduler's tick of the outage tests (a tick's misfire grace of ten
#: compressed minutes: a new job backfills ten slots, not a day), and the migrated cron line.
REGISTRY = (
    chaos_registry("record_keyed", misfire_grace=600)
    + """
[jobs.cronjob]
handler = "chaos_jobs:record_keyed"
schedule = "* * * * *"
mode = "enqueue"
max_attempts = 100
"""
)
WORKER_ARGS = [
    "worker", "--concurrency", "4", "--heartbeat", "1", "--lease", "10", "--poll", "0.2",
    "--grace", "5",
]  # fmt: skip
TICKS_FROM = datetime(2026, 1, 5, tzinfo=UTC)
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\dT")
CRON_FROM = datetime(2026, 6, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Run:
    kind: str
    key: str
    pid: int
    at: float  # time.time() when it started


@contextlib.contextmanager
def _disposed(store: Store) -> Iterator[Store]:
    try:
        yield store
    finally:
        store.dispose()


def read_runs(path: Path) -> list[Run]:
    if not path.exists():
        return []
    runs = []
    for line in path.read_text().splitlines():
        kind, key, pid, at = line.split()
        runs.append(Run(kind, key, int(pid), float(at)))
    return runs


@dataclass(frozen=True)
class Call:
    """One cron run of the migrated line: its slot, exit code and when it ran."""

    slot: datetime
    code: int
    started: float
    ended: float
    stderr: str


@dataclass
class Cron:
    """cron firing the migrated ``enqueue`` line, one call after another, each for the next
    minute's slot (``--slot``), in cron's bare environment."""

    argv: list[str]
    env: dict[str, str]
    calls: list[Call] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._fire, daemon=True)
        self._thread.start()

    def _fire(self) -> None:
        slot = CRON_FROM
        while not self._stop.is_set():
            self.call(slot)
            slot += timedelta(minutes=1)

    def call(self, slot: datetime) -> Call:
        started = time.time()
        done = subprocess.run(
            [*self.argv, "--slot", slot.isoformat()],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        call = Call(slot, done.returncode, started, time.time(), done.stderr)
        self.calls.append(call)
        return call

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(90)

    def acknowledged(self) -> list[Call]:
        """Calls that told cron the slot is safe: written (0) or spooled (75)."""
        return [c for c in self.calls if c.code in (0, 75)]


def quiet(fn: Callable[[], int]) -> int | None:
    """A check from the test's own connection; None while no server takes writes."""
    try:
        return fn()
    except DatabaseUnavailable:
        return None


def newest_tick(store: Store) -> datetime:
    runs = store.runs("tick", limit=100_000)
    return max((r["scheduled_for"] for r in runs), default=TICKS_FROM)


def listening(store: Store) -> int:
    """Sessions on the server ``store`` reaches that wait for wake-ups (workers' LISTEN)."""
    with store.transaction(readonly=True) as conn:
        return int(
            conn.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity WHERE left(query, 7) = 'LISTEN '"
            ).scalar_one()
        )


def until_each(checks: dict[str, Callable[[], bool]], since: float, bound: float) -> dict:
    """Poll every check until each has held once; seconds from ``since`` to the first time
    each held. Fails naming those that did not within ``bound``."""
    met: dict[str, float] = {}
    while len(met) < len(checks):
        for name, check in checks.items():
            if name not in met and check():
                met[name] = time.monotonic() - since
        if len(met) < len(checks) and time.monotonic() - since > bound:
            missing = sorted(set(checks) - set(met))
            raise AssertionError(f"not working again {bound:g}s after the promotion: {missing}")
        time.sleep(0.05)
    return met


@pytest.fixture
def pair(request: pytest.FixtureRequest) -> Iterator[ReplicatedPostgres]:
    if server_bin_dir() is None:
        message = "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin) to start servers"
        if IN_CI:
            pytest.fail(f"CI requires {message}", pytrace=False)
        pytest.skip(message)
    with primary_and_replica(synchronous=request.param == "synchronous") as servers:
        yield servers


@pytest.mark.slow
@pytest.mark.parametrize("pair", ["synchronous", "asynchronous"], indirect=True)
def test_failover_to_the_replica_under_load(
    pair: ReplicatedPostgres, table_prefix: str, tmp_path: Path
) -> None:
    synchronous = pair.synchronous
    url = pair.url()
    registry = write_handler_project(tmp_path / "project", REGISTRY)
    project = registry.parent
    results = tmp_path / "runs.txt"
    spool = tmp_path / "spool"
    env = cli_env(url, table_prefix, registry, MCT_RESULTS=str(results))
    upgraded = run_cli("db", "upgrade", env=env, cwd=project, timeout=120)
    assert upgraded.returncode == 0, upgraded.stderr
    store = open_store(url, prefix=table_prefix)
    cron = Cron(
        Target(cli_path(), str(registry), cron_url(url), table_prefix).argv("cronjob"),
        {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MIGRATE_CRON_SPOOL": str(spool)},
    )
    with Fleet(tmp_path) as fleet, _disposed(store):
        store.enqueue_many(
            "chaos", [{"n": n, "ms": 50 + n % 100} for n in range(JOBS)], max_attempts=100
        )
        workers = [fleet.start(WORKER_ARGS, env, label="worker", cwd=project) for _ in range(2)]
        scheduler = fleet.start(
            ["scheduler", "--now", TICKS_FROM.isoformat(), "--speed", "60", "--lease-ttl", "3"],
            env,
            label="scheduler",
            cwd=project,
        )
        cron.start()
        try:
            _wait_all_working(store, workers, results, cron)
            _a_replica_takes_no_writes(pair, table_prefix)
            lag_from = time.time()
            if not synchronous:
                _replica_falls_behind(pair, results, cron, lag_from)
            answered = {w.pid: w.output().count("the database answers again") for w in workers}
            ticks_before = newest_tick(store)
            killed = time.monotonic()
            killed_at = time.time()
            pair.primary.stop("immediate")
            pair.link.close()  # what it still held back never reaches the replica
            _every_process_notices(workers, scheduler, cron, killed_at)
            pair.replica.promote()
            up = time.monotonic()
            up_at = time.time()
            recovered = until_each(
                {
                    **{
                        f"worker {w.pid}": (
                            lambda w=w: (
                                w.output().count("the database answers again") > answered[w.pid]
                                and any(r.pid == w.pid and r.at > up_at for r in read_runs(results))
                            )
                        )
                        for w in workers
                    },
                    "scheduler": lambda: (
                        (quiet(lambda: newest_tick(store)) or ticks_before) > ticks_before
                    ),
                    "cron enqueue": lambda: any(
                        c.code == 0 and c.started > up_at for c in list(cron.calls)
                    ),
                },
                up,
                RECOVERY_BOUND,
            )
        finally:
            cron.stop()
        totals = _finish(store, workers, scheduler, cron, results, spool)
    runs = read_runs(results)
    first_run = {(r.kind, r.key): r.at for r in reversed(runs)}
    twice = {key: n for key, n in Counter((r.kind, r.key) for r in runs).items() if n > 1}
    _report(totals, twice, recovered, up - killed, None if synchronous else killed_at - lag_from)
    assert {c.code for c in cron.calls} <= {0, 75}, [c.stderr for c in cron.calls if c.code]
    assert not any("Traceback" in c.stderr for c in cron.calls)
    if synchronous:
        assert totals["lost"] == [], "an acknowledged enqueue was lost"
        assert twice == {}, "a job ran twice"
    else:
        # Lost: only what was acknowledged while the replica was held behind; and the window
        # was real (cron had a slot acknowledged in it, which the failover lost).
        assert totals["lost"], "no acknowledged slot was in the lag window"
        assert all(c.ended >= lag_from and c.started <= killed_at for c in totals["lost"])
        # Run again: only jobs whose claim or outcome was in the window.
        assert all(first_run[key] >= lag_from - 1.0 for key in twice), twice
    for proc in (*workers, scheduler):
        assert "Traceback" not in proc.output(), proc.output()[-3000:]
        # One line per event: a driver's multi-line message is cut to its first line.
        assert all(LOG_LINE.match(line) for line in proc.output().splitlines()), proc.output()
    for w in workers:
        assert "db-unavailable" in w.output(), w.output()[-3000:]


def _wait_all_working(store: Store, workers: list[Proc], results: Path, cron: Cron) -> None:
    for w in workers:
        wait_for(
            lambda w=w: sum(r.pid == w.pid for r in read_runs(results)) >= 3,
            60,
            f"worker {w.pid} to run jobs:\n{w.output()[-1500:]}",
        )
    wait_for(lambda: len(store.runs("tick")) >= 2, 60, "the scheduler's first slots")
    wait_for(lambda: sum(c.code == 0 for c in cron.calls) >= 2, 60, "cron's first slots")
    wait_for(lambda: listening(store) == len(workers), 30, "the workers to LISTEN")


def _a_replica_takes_no_writes(pair: ReplicatedPostgres, prefix: str) -> None:
    """A name that leads to the replica (not yet promoted): a write fails with SQLSTATE 25006,
    which the Store reports as the database being unavailable, as LISTEN (the outage rules
    then apply: retry, reconnect) — never a traceback."""
    replica = open_store(pair.replica.url, prefix=prefix)
    try:
        with pytest.raises(DatabaseUnavailable, match="read-only transaction"):
            replica.enqueue("chaos", {"n": -1})
        with pytest.raises(DatabaseUnavailable, match="during recovery"):
            replica.listener()
    finally:
        replica.dispose()


def _replica_falls_behind(
    pair: ReplicatedPostgres, results: Path, cron: Cron, since: float
) -> None:
    """Hold the replica's WAL stream until the primary acknowledged work the replica does not
    have: a cron slot written, and jobs started (their claims and outcomes)."""
    pair.link.freeze()
    wait_for(
        lambda: (
            any(c.code == 0 and c.started >= since for c in list(cron.calls))
            and sum(r.at >= since for r in read_runs(results)) >= 10
        ),
        30,
        "work acknowledged while the replica is held behind",
    )


def _every_process_notices(
    workers: list[Proc], scheduler: Proc, cron: Cron, killed_at: float
) -> None:
    """Promote only once every process has met the missing primary (as an HA manager takes
    its time to decide): each worker has logged the outage, the scheduler too, and cron's
    line has spooled a slot (exit 75) — so recovery is measured from backed-off retries."""
    unavailable = {p.pid: p.output().count("db-unavailable") for p in workers}
    outages = scheduler.output().count(" outage ")
    wait_for(
        lambda: (
            all(w.output().count("db-unavailable") > unavailable[w.pid] for w in workers)
            and scheduler.output().count(" outage ") > outages
            and any(c.code == 75 and c.started >= killed_at for c in list(cron.calls))
        ),
        30,
        "every process to notice that no server takes writes",
    )


def _finish(
    store: Store,
    workers: list[Proc],
    scheduler: Proc,
    cron: Cron,
    results: Path,
    spool: Path,
) -> dict:
    """Stop the scheduler, replay cron's spool (the next cron call does it), let the workers
    drain the queue and stop them; then count."""
    scheduler.signal(signal.SIGTERM)
    assert scheduler.wait(30) == 0, scheduler.output()[-2000:]
    last = cron.call(max(c.slot for c in cron.calls) + timedelta(minutes=1))
    assert last.code == 0, last.stderr
    assert Spool(spool).entries() == [], "a spooled slot was not replayed"
    wait_for(
        lambda: quiet(lambda: store.count_jobs(states=["open", "running"])) == 0,
        90,
        "the queue to drain",
        interval=0.2,
    )
    # A busy worker does not wait for wake-ups; idle, it finds its LISTEN connection gone
    # and opens one on the new primary.
    idle = time.monotonic()
    wait_for(
        lambda: listening(store) == len(workers),
        RECOVERY_BOUND,
        "both workers to LISTEN on the new primary once idle",
    )
    listen_after = time.monotonic() - idle
    for w in workers:
        w.signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(30) == 0, w.output()[-2000:]
    assert store.count_jobs(states=["failed", "cancelled"]) == 0
    ran = {(r.kind, r.key) for r in read_runs(results)}
    jobs = store.list_jobs(limit=100_000)
    keys = {
        (j.kind, str(j.payload["n"]) if j.payload else j.scheduled_for.isoformat())
        for j in jobs
        if j.payload or j.scheduled_for
    }
    assert keys <= ran, "a job in the queue never ran"
    assert {("chaos", str(n)) for n in range(JOBS)} <= keys, "a job enqueued before was lost"
    ticks = sorted(j.scheduled_for for j in jobs if j.kind == "tick" and j.scheduled_for)
    assert ticks == [ticks[0] + timedelta(minutes=i) for i in range(len(ticks))], "a tick gap"
    in_queue = {j.scheduled_for for j in jobs if j.kind == "cronjob"}
    lost = [c for c in cron.acknowledged() if c.slot not in in_queue]
    spooled = sum(c.code == 75 for c in cron.calls)
    return {"jobs": len(jobs), "lost": lost, "listen_after": listen_after, "spooled": spooled}


def _report(totals: dict, twice: dict, recovered: dict, outage: float, lag: float | None) -> None:
    print(
        f"{'synchronous' if lag is None else f'asynchronous ({lag:.1f}s behind)'} failover: "
        f"{totals['jobs']} jobs, {len(totals['lost'])} acknowledged slots lost, "
        f"{len(twice)} jobs run twice ({sum(twice.values()) - len(twice)} extra runs), "
        f"0 left running; {totals['spooled']} cron calls spooled; no primary for "
        f"{outage:.1f}s; every process working again {max(recovered.values()):.1f}s "
        f"after the promotion ({', '.join(f'{k} {v:.1f}s' for k, v in sorted(recovered.items()))}"
        f"); LISTEN on the new primary {totals['listen_after']:.1f}s after the queue drained"
    )
