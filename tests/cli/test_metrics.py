"""``migrate-cron metrics`` from the installed command: a real server on 127.0.0.1 (port 0 =
a free one), scraped over HTTP and parsed with prometheus_client's parser; SIGTERM stops it."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import cli_path, run_cli
from tests.ops.helpers import clocked_store


def _read_port(proc: subprocess.Popen[str], seconds: float = 60) -> int:
    assert proc.stderr is not None
    deadline = time.monotonic() + seconds
    seen = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            line = proc.stderr.readline()
            seen += line
            m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                return int(m.group(1))
            if not line and proc.poll() is not None:
                break
    raise AssertionError(f"no 'serving metrics' line; stderr so far: {seen!r}")


def scrape(env: dict[str, str], cwd: Path, *args: str) -> str:
    """Start ``migrate-cron metrics`` on a free port, scrape /metrics once, stop it with
    SIGTERM (it must exit 0); returns the exposition text."""
    proc = subprocess.Popen(
        [cli_path(), "metrics", "--port", "0", "--host", "127.0.0.1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
        cwd=cwd,
        start_new_session=True,
    )
    try:
        port = _read_port(proc)
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.status == 200
            body = resp.read().decode()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    return str(body)


def test_metrics_command_serves_the_queue_numbers(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    now = datetime.now(UTC)
    with clocked_store(db_url, table_prefix) as (store, clock):
        clock.set(now - timedelta(minutes=20))
        for _ in range(3):
            store.enqueue("mail", max_attempts=1)
        [job] = store.claim("w", 1, kinds=["mail"])
        store.fail("w", job.id, "boom")
        clock.set(now - timedelta(minutes=10))
        [job] = store.claim("w", 1, kinds=["mail"])
        clock.set(now - timedelta(minutes=10) + timedelta(seconds=4))
        store.complete("w", [job.id])

        body = scrape(env, tmp_path, "--window", "1h")

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }
    assert samples[("migrate_cron_up", ())] == 1
    assert samples[("migrate_cron_failed_jobs", (("kind", "mail"),))] == 1
    assert samples[("migrate_cron_jobs", (("kind", "mail"), ("state", "ready")))] == 1
    assert samples[("migrate_cron_jobs_done_window", (("kind", "mail"),))] == 1
    age = samples[("migrate_cron_oldest_ready_age_seconds", (("kind", "mail"),))]
    assert 1200 <= age < 1200 + 120
    for q in ("0.5", "0.95", "1"):
        labels = (("kind", "mail"), ("quantile", q))
        assert abs(samples[("migrate_cron_job_duration_seconds", labels)] - 4.0) < 1e-3


def test_metrics_port_in_use_is_one_line_exit_1(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {"MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}"}
        result = run_cli("metrics", "--port", str(port), env=env, cwd=tmp_path, timeout=60)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr


def test_metrics_bad_window_exits_2(tmp_path: Path) -> None:
    result = run_cli("metrics", "--window", "forever", cwd=tmp_path)
    assert result.returncode == 2
    assert "--window: 'forever' is not a duration" in " ".join(result.stderr.split())
