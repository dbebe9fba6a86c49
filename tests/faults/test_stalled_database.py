"""A database that stalls mid-run (docs/reliability.md): the worker that cannot renew a lease
stops its run before another worker may start it, and SIGTERM ends the worker and the
scheduler within their bounds although their database calls never return.

The database sits behind a TCP proxy on 127.0.0.1 that we freeze: connections stay open and
nothing is relayed — the "accepts and never answers" failure a socket timeout alone does not
catch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from migrate_cron.cli.scheduler import SHUTDOWN_BOUND
from migrate_cron.store import open_store
from tests.faults.procs import Fleet, cli_env, wait_for
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
            # SIGTERM ends the frozen worker within grace + kill grace + its slack.
            started = time.monotonic()
            frozen.signal(signal.SIGTERM)
            frozen.wait(GRACE + KILL_GRACE + 10 + 5)
            took = time.monotonic() - started
            assert took <= GRACE + KILL_GRACE + 10 + 2, f"SIGTERM took {took:.1f}s"
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
            scheduler.wait(20)
            took = time.monotonic() - started
            assert took <= SHUTDOWN_BOUND + 3, f"SIGTERM took {took:.1f}s"
    finally:
        store.drop_schema()
        store.dispose()
