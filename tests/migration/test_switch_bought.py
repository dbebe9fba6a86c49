"""What the switch has bought, from a scripted scenario run with the installed command on
SQLite, PostgreSQL and MariaDB; every figure checked exactly, the same in ``status --json``,
the metrics and the migration board.

- 5 runs fail once, then pass on their retry (a command that fails on its first attempt: a
  marker file per job);
- 3 fires of an ``overlap = "skip"`` job while a run of it is live, recorded as skipped; 2 of
  an ``overlap = "wait"`` job, enqueued to wait;
- 2 hosts fire the same slot: two ``enqueue`` calls, one job, 1 duplicate;
- a scheduler down since 2020 comes back: a yearly job per policy (``run-once``, ``skip``,
  ``backfill`` with ``max_backfill = 2``) does what its policy says with the missed slots.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from migrate_cron.metrics import metrics_registry
from migrate_cron.registry import load_registry
from migrate_cron.store import Store
from migrate_cron.web import pages
from tests.conftest import run_cli

LAST_SEEN = datetime(2020, 1, 1, tzinfo=UTC)  # the scheduler's last recorded yearly slot


def registry_text(markers: Path) -> str:
    flaky = f'm="{markers}/$MIGRATE_CRON_JOB_ID"; [ -e "$m" ] && exit 0; touch "$m"; exit 1'
    every_minute = 'schedule = "* * * * *"\nmode = "enqueue"\ntimezone = "UTC"\n'
    yearly = 'schedule = "0 0 1 1 *"\nmode = "scheduler"\ntimezone = "UTC"\nmisfire_grace = 0\n'
    return (
        f"[jobs.flaky]\ncommand = {json.dumps(flaky)}\n{every_minute}"
        "backoff = { base = 0, cap = 0 }\n\n"
        f'[jobs.sticky]\ncommand = "true"\n{every_minute}overlap = "skip"\n\n'
        f'[jobs.waiter]\ncommand = "true"\n{every_minute}overlap = "wait"\n\n'
        f'[jobs.twice]\ncommand = "true"\n{every_minute}\n'
        f'[jobs.catchup]\ncommand = "true"\n{yearly}policy = "run-once"\n\n'
        f'[jobs.skipper]\ncommand = "true"\n{yearly}policy = "skip"\n\n'
        f'[jobs.filler]\ncommand = "true"\n{yearly}policy = "backfill"\nmax_backfill = 2\n\n'
        '[jobs.oncron]\ncommand = "true"\nschedule = "* * * * *"\nmode = "cron"\n'
    )


def test_the_figures_match_the_scenario_exactly(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(registry_text(markers))
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
        "HOME": str(tmp_path),
    }

    def cli(*args: str) -> str:
        proc = run_cli(*args, env=env, cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, f"{args}: {proc.stdout}{proc.stderr}"
        return proc.stdout

    slot = "2026-06-01T10:{:02d}:00+00:00".format
    for minute in range(5):  # five runs that will fail once
        assert cli("enqueue", "flaky", "--slot", slot(minute)) == "enqueued\n"

    for job in ("sticky", "waiter"):  # a run of each is live on another host
        assert cli("enqueue", job, "--slot", slot(0)) == "enqueued\n"
    live = store.claim("other-host:1", 2, lease=600, kinds=["sticky", "waiter"])
    assert len(live) == 2
    for minute in (1, 2, 3):
        said = cli("enqueue", "sticky", "--slot", slot(minute))
        assert said.startswith("skipped"), said
    for minute in (1, 2):
        assert cli("enqueue", "waiter", "--slot", slot(minute)) == "enqueued\n"
    assert store.complete("other-host:1", [j.id for j in live]) == 2

    assert cli("enqueue", "twice", "--slot", slot(0)) == "enqueued\n"  # host a
    assert cli("enqueue", "twice", "--slot", slot(0)) == "already enqueued\n"  # host b

    for job in ("catchup", "skipper", "filler"):  # the scheduler last ran in 2020
        assert store.enqueue_run(job, LAST_SEEN).created
    now = datetime.now(UTC)
    cli("scheduler", "--once")
    cli("worker", "--once")

    missed = now.year - LAST_SEEN.year  # Jan 1 of each year since, up to this one
    want = {
        "flaky": {"rescued": 5},
        "sticky": {"overlap_held": 3},
        "waiter": {"overlap_held": 2},
        "twice": {"duplicate_fires": 1},
        "catchup": {"missed_run": 1, "missed_skipped": missed - 1},
        "skipper": {"missed_skipped": missed},
        "filler": {"missed_run": 2, "missed_skipped": missed - 2},
    }
    zero = dict.fromkeys(
        ("rescued", "overlap_held", "missed_run", "missed_skipped", "duplicate_fires"), 0
    )
    expected = {kind: {"since": None, **zero, **figures} for kind, figures in want.items()}

    status = json.loads(cli("status", "--json"))
    assert status["since_switch"] == expected  # oncron: still on cron, nothing counted
    assert [k["failed"] for k in status["kinds"] if k["kind"] == "flaky"] == [0]

    reg = load_registry(str(registry))
    body = generate_latest(metrics_registry(store, 3600, list(reg))).decode()
    exported = {
        (s.labels["kind"], s.labels["what"]): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.name == "migrate_cron_since_switch"
    }
    words = {"rescued": "rescued", "overlap_held": "overlap-held", "missed_run": "missed-run",
             "missed_skipped": "missed-skipped", "duplicate_fires": "duplicate-fire"}  # fmt: skip
    assert exported == {
        (kind, words[field]): n
        for kind, figures in expected.items()
        for field, n in figures.items()
        if field != "since"
    }

    board = pages.migration(store, reg, datetime.now(UTC))
    shown = {r.progress.name: r.bought for r in board.rows}
    assert shown["oncron"] is None
    for kind, figures in expected.items():
        row = shown[kind]
        assert row is not None
        assert {w: n for w, _, n in row.figures} == {
            words[f]: n for f, n in figures.items() if f != "since"
        }
