"""``migrate-cron scheduler`` and ``migrate-cron simulate`` through the installed command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from migrate_cron.scheduler.leader import DEFAULT_LEASE_NAME
from migrate_cron.store import Store
from tests.conftest import cli_path, run_cli

REGISTRY = """
[defaults]
command = "true"

[jobs.hourly]
schedule = "0 * * * *"
policy = "backfill"
max_backfill = 2
mode = "scheduler"

[jobs.nightly]
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
policy = "run-once"
mode = "scheduler"

[jobs.legacy]
schedule = "15 * * * *"
mode = "enqueue"

[jobs.adhoc]
mode = "scheduler"
"""


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    path = tmp_path / "migrate-cron.toml"
    path.write_text(REGISTRY)
    return path


@pytest.fixture
def env(db_url: str, table_prefix: str, registry: Path, store: Store) -> dict[str, str]:
    return {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
    }


def test_once_at_an_injected_time_applies_each_policy(env: dict[str, str], store: Store) -> None:
    first = run_cli("scheduler", "--once", "--now", "2026-03-29T00:00:05Z", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert [(e["job"], e["reason"]) for e in json.loads(first.stdout)["events"]] == [
        ("hourly", "on-time")
    ]
    # Down until 04:10: hourly backfills two (cap), records 01:00 and 02:00 skipped... and
    # nightly (02:30 Berlin = the 03:00 CEST jump, 01:00 UTC) runs once.
    later = run_cli("scheduler", "--once", "--now", "2026-03-29T04:10Z", "--json", env=env)
    assert later.returncode == 0, later.stderr
    events = [
        (e["job"], e["slot"][11:16], e["action"], e["reason"])
        for e in json.loads(later.stdout)["events"]
    ]
    assert events == [
        ("hourly", "01:00", "skip", "over-cap"),
        ("hourly", "02:00", "skip", "over-cap"),
        ("hourly", "03:00", "enqueue", "catch-up"),
        ("hourly", "04:00", "enqueue", "catch-up"),
    ]
    # nightly was never seen before 00:00, so nothing of it is missed; legacy is not owned.
    assert store.list_jobs(kind="legacy") == []
    table = run_cli("scheduler", "--once", "--now", "2026-03-29T05:00:30Z", env=env)
    assert table.returncode == 0, table.stderr
    assert table.stdout.split("\n")[0].split() == [
        "JOB",
        "SLOT",
        "(job",
        "time)",
        "ACTION",
        "WHY",
        "RECORD",
        "JOB",
        "ID",
    ]
    assert "hourly" in table.stdout and "on-time" in table.stdout
    # One summary line on stderr (also when nothing is due); -q silences it for cron's mail.
    assert table.stderr == "1 slot due (1 enqueued); next at 2026-03-29 06:00 UTC\n"
    quiet = run_cli("scheduler", "--once", "-q", "--now", "2026-03-29T06:00:01Z", env=env)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert len(store.list_jobs(kind="hourly")) == 5


def test_all_takes_every_scheduled_job(env: dict[str, str], store: Store) -> None:
    res = run_cli(
        "scheduler", "--once", "--all", "--now", "2026-06-01T10:15:02Z", "--json", env=env
    )
    assert res.returncode == 0, res.stderr
    assert [e["job"] for e in json.loads(res.stdout)["events"]] == ["legacy"]


def test_sigterm_finishes_gives_up_the_lease_and_exits_0(env: dict[str, str], store: Store) -> None:
    proc = subprocess.Popen(
        [cli_path(), "scheduler", "--lease-ttl", "30"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while store.lease_holder(DEFAULT_LEASE_NAME) is None:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the scheduler never took the lease"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 0, err
    assert "leading" in err and "released" in err and " stop " in err
    assert store.lease_holder(DEFAULT_LEASE_NAME) is None


def test_usage_errors(tmp_path: Path, registry: Path) -> None:
    env = {
        "MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}",
        "MIGRATE_CRON_REGISTRY": str(registry),
    }
    for args, text in [
        (["--once", "--now", "tomorrow"], "ISO time"),
        (["--speed", "10"], "--speed needs --now"),
        (["--now", "2026-01-01T00:00Z"], "needs --until"),
    ]:
        res = run_cli("scheduler", *args, env=env)
        assert res.returncode == 2, (args, res.stderr)
        assert text in res.stderr
    empty = tmp_path / "empty.toml"
    empty.write_text('[jobs.a]\ncommand = "true"\nschedule = "* * * * *"\n')
    res = run_cli("scheduler", "--once", env={**env, "MIGRATE_CRON_REGISTRY": str(empty)})
    assert res.returncode == 2 and "--all" in res.stderr
    help_text = run_cli("scheduler", "--help").stdout
    for option in ("--lease-ttl", "--once", "--all", "--now", "--until", "--json-logs"):
        assert option in help_text
    assert "--no-lease" not in help_text


def test_unreachable_database_with_once_exits_1(registry: Path) -> None:
    env = {
        "MIGRATE_CRON_DATABASE_URL": "postgresql://u:pw-secret@127.0.0.1:9/x",
        "MIGRATE_CRON_REGISTRY": str(registry),
    }
    res = run_cli("scheduler", "--once", env=env)
    assert res.returncode == 1
    assert "cannot use the database" in res.stderr and "pw-secret" not in res.stderr


# ---------------------------------------------------------------------- simulate
def test_simulate_prints_what_each_policy_does_without_a_database(registry: Path) -> None:
    env = {
        "MIGRATE_CRON_DATABASE_URL": "postgresql://u:p@127.0.0.1:9/unreachable",
        "MIGRATE_CRON_REGISTRY": str(registry),
    }
    res = run_cli("simulate", "--down", "2026-03-29T00:30..2026-03-29T04:10", "--json", env=env)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    runs = [(r["job"], r["slot"][11:16], r["action"], r["reason"]) for r in data["runs"]]
    assert runs == [  # in the order acted on, oldest slot first
        ("hourly", "01:00", "skip", "over-cap"),
        ("nightly", "01:00", "enqueue", "catch-up"),
        ("hourly", "02:00", "skip", "over-cap"),
        ("hourly", "03:00", "enqueue", "catch-up"),
        ("hourly", "04:00", "enqueue", "catch-up"),
        ("hourly", "05:00", "enqueue", "on-time"),
    ]
    nightly = next(r for r in data["runs"] if r["job"] == "nightly")
    assert nightly["slot_local"] == "2026-03-29 03:00 +0200"
    assert data["summary"]["hourly"] == {"enqueue": 3, "late": 2, "skip": 2}

    table = run_cli(
        "simulate",
        "hourly",
        "--from",
        "2026-06-01T00:30",
        "--to",
        "2026-06-01T03:30",
        "--down",
        "01:00..02:30",
        env=env,
    )
    assert table.returncode == 2 and "--down" in table.stderr
    table = run_cli(
        "simulate",
        "hourly",
        "--from",
        "2026-06-01T00:30",
        "--to",
        "2026-06-01T03:30",
        "--down",
        "2026-06-01T00:50..2026-06-01T02:30",
        "--tz",
        "Europe/Berlin",
        env=env,
    )
    assert table.returncode == 0, table.stderr
    lines = table.stdout.strip().splitlines()
    assert lines[0].split()[:2] == ["JOB", "SLOT"]
    # Berlin times: 22:30Z..01:30Z, down 22:50Z..00:30Z: 23:00Z and 00:00Z are backfilled at
    # 00:30Z, 01:00Z is on time.
    assert len(lines) == 1 + 3
    assert [line.split()[-3] for line in lines[1:]] == ["catch-up", "catch-up", "on-time"]
    assert "hourly: 3 enqueued (2 late), 0 skipped" in table.stderr


def test_simulate_errors(registry: Path) -> None:
    env = {"MIGRATE_CRON_REGISTRY": str(registry)}
    assert run_cli("simulate", "nope", env=env).returncode == 2
    no_schedule = run_cli("simulate", "adhoc", env=env)
    assert no_schedule.returncode == 2 and "without a schedule" in no_schedule.stderr
    backwards = run_cli("simulate", "--down", "2026-01-02..2026-01-01", env=env)
    assert backwards.returncode == 2 and "ends before" in backwards.stderr
    bad_tz = run_cli("simulate", "--tz", "Mars/Base", env=env)
    assert bad_tz.returncode == 2
