"""``migrate-cron enqueue NAME`` as cron runs it: the installed command, a real database."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from migrate_cron.crontab.schedule import Schedule
from migrate_cron.migration.rewrite import command_start, enqueue_line
from migrate_cron.migration.target import Target
from migrate_cron.store import Store
from tests.conftest import cli_path, run_cli

REGISTRY = """
[jobs.nightly]
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
command = "true"
max_attempts = 3

[jobs.adhoc]
command = "true"
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


def test_second_call_for_the_same_slot_is_a_no_op(env: dict[str, str], store: Store) -> None:
    first = run_cli("enqueue", "nightly", env=env)
    second = run_cli("enqueue", "nightly", env=env)
    assert (first.returncode, first.stdout) == (0, "enqueued\n"), first.stderr
    assert (second.returncode, second.stdout) == (0, "already enqueued\n"), second.stderr
    (job,) = store.list_jobs(kind="nightly")
    expected = Schedule.parse("30 2 * * *", "Europe/Berlin").latest_at_or_before(datetime.now(UTC))
    assert job.scheduled_for == expected
    assert job.max_attempts == 3
    assert [r["outcome"] for r in store.runs("nightly")] == ["enqueued"]


def test_json_and_explicit_slot_read_in_the_job_timezone(env: dict[str, str], store: Store) -> None:
    # 02:30 does not exist in Berlin on 2026-03-29: the slot is the jump, 03:00 CEST.
    res = run_cli("enqueue", "nightly", "--slot", "2026-03-29T03:00", "--json", env=env)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["outcome"] == "enqueued" and data["created"] is True
    assert data["slot"] == "2026-03-29T01:00:00Z"
    assert data["slot_local"] == "2026-03-29T03:00:00+02:00"
    (job,) = store.list_jobs(kind="nightly")
    assert data["job_id"] == job.id
    again = run_cli("enqueue", "nightly", "--slot", "2026-03-29T01:00:00Z", "--json", env=env)
    assert json.loads(again.stdout)["outcome"] == "already enqueued"


def test_quiet_prints_nothing_and_a_job_without_schedule_uses_the_minute(
    env: dict[str, str], store: Store
) -> None:
    before = datetime.now(UTC).replace(second=0, microsecond=0)
    res = run_cli("enqueue", "adhoc", "--quiet", env=env)
    after = datetime.now(UTC).replace(second=0, microsecond=0)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    (job,) = store.list_jobs(kind="adhoc")
    assert job.scheduled_for in (before, after)


def test_a_slot_recorded_as_skipped_is_reported(env: dict[str, str], store: Store) -> None:
    store.record_skipped("nightly", [datetime(2026, 6, 1, 0, 30, tzinfo=UTC)])
    res = run_cli("enqueue", "nightly", "--slot", "2026-06-01T02:30", env=env)
    assert (res.returncode, res.stdout) == (0, "already recorded as skipped\n")
    assert store.list_jobs() == []


def test_unknown_job_and_bad_slots(tmp_path: Path, registry: Path) -> None:
    env = {
        "MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}",
        "MIGRATE_CRON_REGISTRY": str(registry),
    }
    unknown = run_cli("enqueue", "nightlyy", env=env)
    assert unknown.returncode == 2  # a usage error, with the likely name
    assert "no job 'nightlyy'" in unknown.stderr and "did you mean 'nightly'?" in unknown.stderr
    assert "adhoc, nightly" in unknown.stderr
    assert "Traceback" not in unknown.stderr

    bad = run_cli("enqueue", "nightly", "--slot", "yesterday", env=env)
    assert bad.returncode == 2 and "ISO time" in bad.stderr

    off = run_cli("enqueue", "nightly", "--slot", "2026-03-29T02:30", env=env)
    assert off.returncode == 2
    assert "not a slot" in off.stderr and "2026-03-29T03:00:00+02:00" in off.stderr

    # A registry that is not there (a deploy half done) keeps the run: spooled, exit 75.
    spool = tmp_path / "spool"
    missing = run_cli(
        "enqueue",
        "nightly",
        env={**env, "MIGRATE_CRON_REGISTRY": "nope.toml", "MIGRATE_CRON_SPOOL": str(spool)},
        cwd=tmp_path,
    )
    assert missing.returncode == 75 and "no registry file" in missing.stderr
    assert len(missing.stderr.splitlines()) == 1 and len(list(spool.glob("*.slot.json"))) == 1


def test_unreachable_database_spools_exits_75_with_a_masked_message(registry: Path) -> None:
    env = {
        "MIGRATE_CRON_DATABASE_URL": "postgresql://cron:s3cret@127.0.0.1:9/queue",
        "MIGRATE_CRON_REGISTRY": str(registry),
        "MIGRATE_CRON_SPOOL": str(registry.parent / "spool"),
    }
    res = run_cli("enqueue", "nightly", env=env)
    assert res.returncode == 75
    assert "cannot use the database" in res.stderr and "spooled to" in res.stderr
    assert len(list((registry.parent / "spool").glob("*.slot.json"))) == 1
    assert "s3cret" not in res.stderr + res.stdout
    assert "Traceback" not in res.stderr


def test_missing_tables_say_what_to_run(tmp_path: Path, registry: Path) -> None:
    env = {
        "MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}",
        "MIGRATE_CRON_REGISTRY": str(registry),
    }
    res = run_cli("enqueue", "nightly", env=env)
    assert res.returncode == 1 and "db upgrade" in res.stderr


@pytest.mark.slow
def test_crontab_line_fired_from_two_hosts_runs_once_with_its_slot(
    env: dict[str, str], store: Store, tmp_path: Path
) -> None:
    """End to end: the rewritten crontab line fires on two "hosts" (two processes, the same
    minute), one job results, and the worker runs it with MIGRATE_CRON_SCHEDULED_FOR set."""
    out_file = tmp_path / "ran.txt"
    registry = tmp_path / "e2e.toml"
    registry.write_text(
        "[jobs.invoices]\n"
        'schedule = "30 2 * * *"\n'
        'timezone = "Europe/Berlin"\n'
        'mode = "enqueue"\n'
        f'command = \'printf "%s\\n" "$MIGRATE_CRON_SCHEDULED_FOR" >> {out_file}\'\n'
    )
    host_env = {**os.environ, "PATH": "/usr/bin:/bin"}  # cron's bare environment
    for key in (
        "MIGRATE_CRON_DATABASE_URL",
        "MIGRATE_CRON_TABLE_PREFIX",
        "MIGRATE_CRON_REGISTRY",
        "MIGRATE_CRON_DEBUG",
    ):
        host_env.pop(key, None)
    # The legacy line, rewritten the way `migrate-cron migrate --to enqueue` rewrites it.
    legacy = "30 2 * * * php /var/www/artisan invoices:send"
    target = Target(
        cli_path(),
        str(registry),
        env["MIGRATE_CRON_DATABASE_URL"],
        env["MIGRATE_CRON_TABLE_PREFIX"],
    )
    rewritten = enqueue_line(legacy, False, target.argv("invoices"))
    assert rewritten.startswith("30 2 * * * ") and " enqueue invoices --quiet " in rewritten
    # What cron runs for it (no `%` in it, so no stdin): /bin/sh -c COMMAND.
    line = rewritten[command_start(rewritten, False) :]
    schedule = Schedule.parse("30 2 * * *", "Europe/Berlin")
    before = schedule.latest_at_or_before(datetime.now(UTC))
    hosts = [
        subprocess.Popen(
            ["/bin/sh", "-c", line],
            env=host_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for h in hosts:
            out, err = h.communicate(timeout=60)
            assert (h.returncode, out, err) == (0, "", "")
    finally:
        for h in hosts:
            if h.poll() is None:
                h.kill()
    (job,) = store.list_jobs(kind="invoices")
    assert job.scheduled_for in (before, schedule.latest_at_or_before(datetime.now(UTC)))
    worker = run_cli(
        "worker", "--once", env={**env, "MIGRATE_CRON_REGISTRY": str(registry)}, timeout=120
    )
    assert worker.returncode == 0, worker.stderr
    done = store.get(job.id)
    assert done is not None and done.state == "done", worker.stderr
    assert job.scheduled_for is not None
    assert out_file.read_text().splitlines() == [job.scheduled_for.isoformat()]
