"""``migrate-cron status`` from the installed command: JSON numbers, --check exit codes,
the live --watch view in a real pseudo-terminal, and bad input."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store
from tests.conftest import cli_path, run_cli
from tests.ops.helpers import clocked_store, iso

REGISTRY = """
[jobs.every5]
schedule = "*/5 * * * *"
command = "true"
mode = "scheduler"

[jobs.email]
command = "true"

[jobs.sms]
command = "true"
"""


def _floor5(t: datetime) -> datetime:
    return t.replace(minute=t.minute - t.minute % 5, second=0, microsecond=0)


def fill(store: Store, clock: FakeClock, real_now: datetime) -> datetime:
    """Jobs at known times relative to the real clock the command reads; returns the slot."""
    t = real_now - timedelta(hours=1)
    clock.set(t)
    ids = [store.enqueue("email", run_at=t).job_id for _ in range(20)]
    store.claim("w", 20, lease=86400, kinds=["email"])
    for i, job_id in enumerate(sorted(ids), start=1):
        clock.set(t + timedelta(seconds=i))
        store.complete("w", [job_id])
    clock.set(real_now - timedelta(minutes=30))
    for _ in range(2):
        store.enqueue("sms", max_attempts=1)
    for job in store.claim("w", 2, kinds=["sms"]):
        store.fail("w", job.id, "smtp: connection refused")
    store.enqueue("email", run_at=real_now - timedelta(minutes=10))
    slot = _floor5(real_now) - timedelta(minutes=15)
    clock.set(slot)
    store.enqueue_run("every5", slot)
    clock.set(slot + timedelta(seconds=7))
    [job] = store.claim("w", 1, kinds=["every5"])
    clock.set(slot + timedelta(seconds=9))
    store.complete("w", [job.id])
    return slot


@pytest.fixture
def env(db_url: str, table_prefix: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    (tmp_path / "migrate-cron.toml").write_text(REGISTRY)
    with clocked_store(db_url, table_prefix) as (store, clock):
        fill(store, clock, datetime.now(UTC))
        yield {
            "MIGRATE_CRON_DATABASE_URL": db_url,
            "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        }


def test_status_json_reports_counts_ages_percentiles_and_lag(
    env: dict[str, str], tmp_path: Path
) -> None:
    started = datetime.now(UTC)
    result = run_cli("status", "--json", "--since", "24h", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    elapsed = (datetime.now(UTC) - started).total_seconds() + 5
    kinds = {k["kind"]: k for k in data["kinds"]}
    assert sorted(kinds) == ["email", "every5", "sms"]
    email = kinds["email"]
    assert (email["ready"], email["done"], email["failed"]) == (1, 20, 0)
    assert 600 <= email["oldest_ready_age"] <= 600 + elapsed
    assert email["duration_p50"] == pytest.approx(10.5, abs=1e-3)
    assert email["duration_p95"] == pytest.approx(19.05, abs=1e-3)
    assert email["duration_max"] == pytest.approx(20, abs=1e-3)
    assert kinds["sms"]["failed"] == 2 and kinds["sms"]["last_failure"] is not None
    sched = kinds["every5"]["schedule"]
    slot = datetime.fromisoformat(sched["last_slot"])
    assert sched["expression"] == "*/5 * * * *"
    assert sched["started_at"] == iso(slot + timedelta(seconds=7))
    assert sched["lag_reason"] == "next slot not enqueued"
    assert sched["missed_slot"] == iso(slot + timedelta(minutes=5))
    # now - (slot + 5 min), with slot = floor5(now) - 15 min: between 10 and 15 minutes.
    assert 600 <= sched["lag"] <= 900 + elapsed
    assert datetime.fromisoformat(sched["next_slot"]) > started
    assert data["totals"]["failed"] == 2


def test_status_table_on_stdout(env: dict[str, str], tmp_path: Path) -> None:
    result = run_cli("status", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for text in ("email", "sms", "every5", "*/5 * * * *", "next slot not enqueued", " 19s "):
        assert text in result.stdout


def test_check_exits_1_naming_each_breached_threshold(env: dict[str, str], tmp_path: Path) -> None:
    result = run_cli("status", "--check", env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("CRITICAL max-age: email: oldest ready job has waited 10m")
    assert lines[1].startswith("CRITICAL max-lag: every5: slot ")
    assert " not enqueued, " in lines[1] and lines[1].endswith(" late (limit 2m)")
    assert lines[2].startswith("CRITICAL max-failed: sms: 2 failed jobs (limit 0)")

    loose = ("--max-age", "1h", "--max-failed", "2", "--max-lag", "1h")
    result = run_cli("status", "--check", *loose, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("OK 3 kinds")

    result = run_cli(
        "status", "--check", "--max-age", "1h", "--max-lag", "1h", "--json", env=env, cwd=tmp_path
    )
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert [(b["threshold"], b["subject"], b["value"], b["limit"]) for b in data["breaches"]] == [
        ("max-failed", "sms", 2, 0)
    ]


@pytest.mark.parametrize(
    ("job", "reason"),
    [
        ('[jobs.every5]\nschedule = "*/5 * * * *"\ncommand = "true"\n', "still on cron"),
        ('[jobs.every5]\ncommand = "true"\nmode = "enqueue"\n', "no schedule"),
    ],
    ids=["still-on-cron", "no-schedule"],
)
def test_lag_is_only_judged_on_slots_someone_promised(
    env: dict[str, str], tmp_path: Path, job: str, reason: str
) -> None:
    """The same late slot: no page for a job still on cron (nobody enqueues its slots) or one
    without a schedule (a manual run or retry may start at any time)."""
    others = REGISTRY[REGISTRY.index("[jobs.email]") :]
    (tmp_path / "migrate-cron.toml").write_text(job + "\n" + others)
    result = run_cli("status", "--check", "--json", env=env, cwd=tmp_path)
    data = json.loads(result.stdout)
    assert [b["threshold"] for b in data["breaches"]] == ["max-age", "max-failed"]
    result = run_cli("status", "--json", env=env, cwd=tmp_path)
    every5 = {k["kind"]: k for k in json.loads(result.stdout)["kinds"]}["every5"]
    assert every5["schedule"]["lag"] is None
    assert every5["schedule"]["lag_reason"] == reason


def test_explicit_registry_that_does_not_exist_is_an_error(
    env: dict[str, str], tmp_path: Path
) -> None:
    result = run_cli("status", "--registry", "nope.toml", env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.toml" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--since", "5x"), "--since: '5x' is not a duration"),
        (("--max-age", "soon", "--check"), "--max-age: 'soon' is not a duration"),
        (("--watch", "--json"), "--watch is a live view"),
        (("--watch",), "--watch needs a terminal"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}"}
    result = run_cli("status", *args, env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_tables_say_what_to_run(tmp_path: Path) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}"}
    result = run_cli("status", env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert "migrate-cron db upgrade" in result.stderr


def test_watch_refreshes_in_place_until_ctrl_c(env: dict[str, str], tmp_path: Path) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [cli_path(), "status", "--watch", "--interval", "0.2"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, **env, "COLUMNS": "200", "LINES": "50"},
        cwd=tmp_path,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while seen.count(b"Ctrl-C to stop") < 3:
            assert time.monotonic() < deadline, seen[-2000:]
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        os.killpg(proc.pid, signal.SIGINT)
        # Keep draining the terminal while it stops: a full pty would block its last writes.
        stop_by = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < stop_by:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        os.close(master)
    text = seen.decode(errors="replace")
    assert "email" in text and "every5" in text
    assert "\x1b[2K" in text or "\x1b[1A" in text  # redrawn in place, not appended


def test_window_is_spelled_the_same_as_metrics(env: dict[str, str], tmp_path: Path) -> None:
    """`status --since` and `metrics --window` name one idea: each takes both spellings."""
    since = json.loads(run_cli("status", "--json", "--since", "24h", env=env, cwd=tmp_path).stdout)
    window = run_cli("status", "--json", "--window", "24h", env=env, cwd=tmp_path)
    assert window.returncode == 0, window.stderr
    assert json.loads(window.stdout)["window_seconds"] == since["window_seconds"] == 86400
