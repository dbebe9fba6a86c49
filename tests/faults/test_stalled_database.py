"""A database that stalls (docs/reliability.md, rows 16 and 17): every command gives up within
its use's time limit (``store/timeouts.py``) — ``status --check``, ``jobs list``, a metrics
scrape within Prometheus's scrape timeout, a worker starting, or stopped while it starts —; the
worker that cannot renew a lease stops its run before another worker may start it and tells of
the outage at once, and of its end only once the database answers; SIGTERM ends the worker and
the scheduler (exit 0) within their bounds although their database calls never return.

The database sits behind a TCP proxy on 127.0.0.1 that we freeze: connections stay open and
nothing is relayed — the "accepts and never answers" failure a socket timeout alone does not
catch.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from migrate_cron.scheduler.shutdown import SHUTDOWN_BOUND
from migrate_cron.store import open_store
from migrate_cron.store.timeouts import Use, limits
from tests.faults.procs import Fleet, Proc, cli_env, tcp_client_ports, wait_for
from tests.faults.proxy import StallingProxy, upstream_of, via_proxy
from tests.worker.helpers import pid_alive

REGISTRY = """\
[jobs.long]
command = 'echo "start $$ $(date +%s.%N)" >> "$RUNS"; sleep 20; echo "end $$" >> "$RUNS"'
env = {{ RUNS = "{runs}" }}
max_attempts = 5

[jobs.tick]
command = "true"
schedule = "* * * * *"
mode = "scheduler"
"""
GRACE = 1.0
KILL_GRACE = 5.0  # the worker's default
LEASE = 3.0  # 3 x --heartbeat 1: the frozen worker's claim loop asks again once it is fenced
#: Prometheus's default ``scrape_timeout``: a scrape must answer within it, database or not.
SCRAPE_TIMEOUT = 10.0
#: What a command may take past its time limit to print its line and exit, on a loaded
#: 2-core machine (measured: under 1 s; before #30 MariaDB waited 120 s).
EXIT = 3.0


def _starts(runs: Path) -> list[tuple[int, float]]:
    if not runs.exists():
        return []
    out = []
    for line in runs.read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == "start":
            out.append((int(parts[1]), float(parts[2])))
    return out


@pytest.mark.slow
def test_a_worker_that_cannot_renew_stops_its_run_before_another_starts_it(
    server_url: str, table_prefix: str, tmp_path: Path
) -> None:
    store = open_store(server_url, prefix=table_prefix)
    store.create_schema()
    runs = tmp_path / "runs.log"
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY.format(runs=runs))
    pids: list[int] = []
    try:
        with StallingProxy(*upstream_of(server_url)) as proxy, Fleet(tmp_path) as fleet:
            store.enqueue("long")
            args = ["worker", "--concurrency", "1", "--heartbeat", "1", "--grace", str(GRACE)]
            frozen = fleet.start(
                args, cli_env(via_proxy(server_url, proxy), table_prefix, registry), label="a"
            )
            [(first_pid, _)] = wait_for(lambda: _starts(runs), 30, "the first run to start")
            pids.append(first_pid)
            time.sleep(1.0)  # the database goes away 1 s into the run:
            proxy.freeze()  # new connections hang, nothing is relayed,
            proxy.cut()  # and the open ones are cut (the server drops their locks)
            cut_at = time.monotonic()
            other = fleet.start(args, cli_env(server_url, table_prefix, registry), label="b")
            # Watch the first run's process: note when it is gone (polled, so never early).
            gone_at = wait_for(
                lambda: None if pid_alive(first_pid) else time.time(), 30, "the first run to stop"
            )
            second = wait_for(
                lambda: _starts(runs)[1:] or None, 60, "another worker to start the job"
            )
            (second_pid, second_start) = second[0]
            pids.append(second_pid)
            assert gone_at < second_start, (
                f"the first run was still alive {gone_at - second_start:.2f}s after the "
                "second one started"
            )
            assert "lease-fenced" in frozen.output()
            # Each loop of the frozen worker tells of the outage within its first call's limit
            # (#30: on MariaDB the claim loop and the reaper said nothing for 90 s) ...
            loop = limits(Use.LOOP)
            for what in ("heartbeat", "reaper", "claiming jobs"):
                wait_for(
                    lambda what=what: f"db-unavailable {what}:" in frozen.output(),
                    cut_at + loop.connect + LEASE + EXIT - time.monotonic(),
                    f"the frozen worker's {what} to log the outage:\n{frozen.output()[-2000:]}",
                )
            # ... and never of its end while it lasts: since the fence emptied its ledger, the
            # heartbeat has had nothing to ask; a round without an answer proves nothing.
            assert "answers again" not in frozen.output(), frozen.output()[-2000:]
            # SIGTERM ends the frozen worker within grace + kill grace + its slack.
            started = time.monotonic()
            frozen.signal(signal.SIGTERM)
            frozen.wait(GRACE + KILL_GRACE + 10 + 5)
            took = time.monotonic() - started
            assert took <= GRACE + KILL_GRACE + 10 + 2, f"SIGTERM took {took:.1f}s"
            print(f"the frozen worker stopped {took:.1f}s after SIGTERM")
            assert "Traceback" not in frozen.output(), frozen.output()[-3000:]
            other.signal(signal.SIGKILL)
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        store.drop_schema()
        store.dispose()


@pytest.mark.slow
def test_sigterm_ends_a_scheduler_whose_database_froze(
    server_url: str, table_prefix: str, tmp_path: Path
) -> None:
    store = open_store(server_url, prefix=table_prefix)
    store.create_schema()
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY.format(runs=tmp_path / "runs.log"))
    try:
        with StallingProxy(*upstream_of(server_url)) as proxy, Fleet(tmp_path) as fleet:
            env = cli_env(via_proxy(server_url, proxy), table_prefix, registry)
            scheduler = fleet.start(["scheduler", "--lease-ttl", "2"], env, label="scheduler")
            wait_for(lambda: "start" in scheduler.output(), 30, "the scheduler to start")
            time.sleep(1.0)
            proxy.freeze()
            time.sleep(3.0)  # its lease renewal is now stuck in a call that never returns
            started = time.monotonic()
            scheduler.signal(signal.SIGTERM)
            code = scheduler.wait(20)
            took = time.monotonic() - started
            assert took <= SHUTDOWN_BOUND + 3, f"SIGTERM took {took:.1f}s"
            print(f"the frozen scheduler stopped {took:.1f}s after SIGTERM")
            # A stop asked for and done: exit 0, whether its frozen call gave up in time
            # (``Use.LOOP``) or the hard bound ended it (#30: it exited 1).
            assert code == 0, scheduler.output()[-2000:]
            assert "Traceback" not in scheduler.output(), scheduler.output()[-3000:]
    finally:
        store.drop_schema()
        store.dispose()


def _metrics_port(proc: Proc) -> int | None:
    found = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/", proc.output())
    return int(found.group(1)) if found else None


def _scrape(port: int) -> tuple[float, float]:
    """(migrate_cron_up, seconds the scrape took)."""
    started = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as resp:
        body = resp.read().decode()
    took = time.monotonic() - started
    up = next(
        s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.name == "migrate_cron_up"
    )
    return up, took


class _Exits:
    """For each process: how long it waited for the database — from its first connection to
    the proxy (seen in /proc by a thread per process) to its exit — so that Python's start on
    a loaded machine does not count, and its exit code."""

    def __init__(self, procs: list[Proc], port: int) -> None:
        self._procs = procs
        self._port = port
        self._seen: dict[str, tuple[int, float]] = {}
        for p in procs:
            threading.Thread(target=self._note, args=(p,), daemon=True).start()

    def _note(self, proc: Proc) -> None:
        connected = None
        while proc.popen.poll() is None and connected is None:
            if tcp_client_ports(proc.pid, self._port):
                connected = time.monotonic()
            else:
                time.sleep(0.02)
        code = proc.popen.wait()
        self._seen[proc.label] = (code, time.monotonic() - (connected or proc.started))

    def wait(self, timeout: float) -> dict[str, tuple[int, float]]:
        wait_for(lambda: len(self._seen) == len(self._procs), timeout, "the commands to exit")
        return dict(self._seen)


@pytest.mark.slow
def test_every_command_gives_up_in_time_on_a_database_that_never_answers(
    server_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """#30 item 5: behind a server that accepts and never answers, MariaDB waited 120 s (the
    read timeout bounded the login) and PostgreSQL 10.5 s; a worker then took 47 s to obey
    SIGTERM. Now each use gives up after its limit, on both."""
    store = open_store(server_url, prefix=table_prefix)
    store.create_schema()
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY.format(runs=tmp_path / "runs.log"))
    quick, loop = limits(Use.QUICK), limits(Use.LOOP)
    try:
        with StallingProxy(*upstream_of(server_url)) as proxy, Fleet(tmp_path) as fleet:
            env = cli_env(via_proxy(server_url, proxy), table_prefix, registry)
            metrics = fleet.start(["metrics", "--port", "0"], env, label="metrics")
            port = wait_for(lambda: _metrics_port(metrics), 60, "the metrics server")
            assert _scrape(port)[0] == 1  # it reads the queue, and keeps the connection
            proxy.freeze()
            commands = [
                fleet.start(["status", "--check"], env, label="status"),
                fleet.start(["jobs", "list"], env, label="jobs"),
                fleet.start(["worker"], env, label="worker"),
            ]
            exits = _Exits(commands, proxy.port)
            stopped = fleet.start(["worker"], env, label="stopped")
            # A scrape while its pooled connection is silent (the deadline / read timeout).
            up, took = _scrape(port)
            assert up == 0 and took < SCRAPE_TIMEOUT, f"scrape: up {up} after {took:.1f}s"
            print(f"scrape of a silent connection: {took:.1f}s")
            # SIGTERM to a worker waiting for the database at start.
            wait_for(lambda: tcp_client_ports(stopped.pid, proxy.port), 30, "the worker to connect")
            stopped.signal(signal.SIGTERM)
            term_at = time.monotonic()
            code = stopped.wait(60)
            took = time.monotonic() - term_at
            assert code == 0, stopped.output()[-2000:]
            assert took < loop.connect + EXIT, f"the worker obeyed SIGTERM after {took:.1f}s"
            assert "stopped, never started" in stopped.output()
            print(f"worker stopped at start: {took:.1f}s after SIGTERM")
            for label, (code, took) in exits.wait(60).items():
                proc = next(p for p in commands if p.label == label)
                out = proc.output()
                bound = (loop if label == "worker" else quick).connect + EXIT
                assert code == 1, f"{label}: exit {code}\n{out}"
                assert took < bound, f"{label} gave up after {took:.1f}s (bound {bound:g}s)"
                assert out.count("\n") == 1 and "cannot use the database" in out, out
                print(f"{label}: exit 1, {took:.1f}s after it connected")
            # A scrape that must open a new connection to the silent server (the login).
            proxy.cut()
            up, took = _scrape(port)
            assert up == 0 and took < SCRAPE_TIMEOUT, f"scrape: up {up} after {took:.1f}s"
            print(f"scrape that connects: {took:.1f}s")
            for proc in fleet.procs:
                assert "Traceback" not in proc.output(), proc.output()[-3000:]
    finally:
        store.drop_schema()
        store.dispose()
