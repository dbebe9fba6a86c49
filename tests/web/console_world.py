"""The world of the console's browser test, made as a user's would be: the sample crontab's
registry (two lines switched) with two jobs of the test's own, real workers that run them, and a
server of the installed ``migrate-cron web``.

``burst-fail`` prints a word the search finds and exits 3 on its one attempt (the failure
burst the trend chart shows); ``slow-print`` prints, then waits as long as its worker lives
(the output so far of a running job, and a worker that dies mid-run).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import cli_path

#: A word of the burst's output that nothing else prints.
BURST_WORD = "zebracrossing"
#: What ``slow-print`` prints before it waits.
HALFWAY = "halfway-there"
START_TIMEOUT = 30.0

EXTRA_JOBS = f"""

[jobs.burst-fail]
command = "echo 'nightly feed {BURST_WORD} rejected'; exit 3"
max_attempts = 1

[jobs.slow-print]
command = "echo {HALFWAY}; while kill -0 $PPID 2>/dev/null; do sleep 0.2; done"
max_attempts = 1
"""


def add_jobs(registry: Path) -> None:
    """The test's two jobs, appended to the generated registry as a user would add them."""
    with registry.open("a", encoding="utf-8") as out:
        out.write(EXTRA_JOBS)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Stop a process we started, killing it if it does not go in time."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def web_server(
    env: Mapping[str, str], registry: Path, cwd: Path, token: str
) -> Iterator[tuple[str, Path]]:
    """``migrate-cron web --allow-actions`` on a free port; yields its URL and log file."""
    port = free_port()
    log_path = cwd / "web.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [cli_path(), "web", "--port", str(port), "--allow-actions", "--registry",
             str(registry), "--refresh", "1"],
            cwd=cwd, env={**env, "MIGRATE_CRON_WEB_TOKEN": token},
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                assert proc.poll() is None, log_path.read_text()
                try:
                    with urllib.request.urlopen(f"{base}/healthz", timeout=2) as reply:
                        if reply.status == 200:
                            break
                except OSError:
                    pass
                assert time.monotonic() < deadline, "the server did not answer in time"
                time.sleep(0.1)
            yield base, log_path
        finally:
            stop(proc)


def run_worker_once(env: Mapping[str, str], registry: Path, cwd: Path, kind: str) -> str:
    """``worker --once`` for one kind: runs what is ready, then exits."""
    proc = subprocess.run(
        [cli_path(), "worker", "--once", "--kinds", kind, "--registry", str(registry)],
        cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def start_worker(
    env: Mapping[str, str], registry: Path, cwd: Path, kind: str
) -> subprocess.Popen[bytes]:
    """A long-running worker for one kind, heartbeating every second."""
    log = (cwd / f"worker-{kind}.log").open("w")
    return subprocess.Popen(
        [cli_path(), "worker", "--kinds", kind, "--registry", str(registry), "--heartbeat", "1"],
        cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip


def base_env(db_url: str, table_prefix: str) -> dict[str, str]:
    env = {
        **os.environ,
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
    }
    env.pop("MIGRATE_CRON_DEBUG", None)
    return env
