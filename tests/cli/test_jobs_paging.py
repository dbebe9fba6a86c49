"""``jobs list`` finds a job by ref or age and pages with an id cursor (``--after``), from the
installed command on each backend."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.conftest import run_cli
from tests.ops.helpers import clocked_store


def listed(env: dict[str, str], cwd: Path, *args: str) -> dict[str, object]:
    done = run_cli("jobs", "list", "--json", *args, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    document: dict[str, object] = json.loads(done.stdout)
    return document


def ids(document: dict[str, object]) -> list[int]:
    return [int(j["id"]) for j in document["jobs"]]  # type: ignore[attr-defined, index]


def test_pages_refs_and_age(tmp_path: Path, db_url: str, table_prefix: str) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    now = datetime.now(UTC)
    with clocked_store(db_url, table_prefix, start=now - timedelta(days=3)) as (store, clock):
        old = store.enqueue("orders", {"n": 0}, ref="order:1000").job_id
        clock.set(now)
        new = [store.enqueue("orders", {"n": i}, ref=f"order:{i}").job_id for i in range(1, 8)]
        everything = sorted([old, *new], reverse=True)

        first = listed(env, tmp_path, "--limit", "3")
        assert ids(first) == everything[:3] and first["next_after"] == everything[2]
        second = listed(env, tmp_path, "--limit", "3", "--after", str(first["next_after"]))
        assert ids(second) == everything[3:6]
        last = listed(env, tmp_path, "--limit", "3", "--after", str(second["next_after"]))
        assert ids(last) == everything[6:] and last["next_after"] is None

        assert ids(listed(env, tmp_path, "--ref", "order:4")) == [new[3]]
        assert ids(listed(env, tmp_path, "--ref", "order:1000", "--kind", "orders")) == [old]
        assert ids(listed(env, tmp_path, "--since", "1d")) == sorted(new, reverse=True)

        table = run_cli("jobs", "list", "--limit", "2", env=env, cwd=tmp_path)
        assert f"jobs list --after {everything[1]}" in table.stderr


def test_search_until_and_moments(tmp_path: Path, db_url: str, table_prefix: str) -> None:
    """``--search`` looks in errors, outputs, payloads and the registry's commands;
    ``--until`` and ``--since`` take a duration or a moment; the web's filters are these."""
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    (tmp_path / "migrate-cron.toml").write_text(
        '[jobs.backup]\ncommand = "rsync -a /srv/ backup:/srv/"\n'
        '[jobs.report]\ncommand = "make-report --weekly"\n'
    )
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    with clocked_store(db_url, table_prefix, start=start) as (store, clock):
        backup = store.enqueue("backup").job_id
        clock.set(start + timedelta(hours=2))
        report = store.enqueue("report", {"note": "after RSYNC of yesterday"}).job_id
        other = store.enqueue("report", {"note": "50% done"}).job_id

        assert ids(listed(env, tmp_path, "--search", "rsync")) == [report, backup]
        assert ids(listed(env, tmp_path, "--search", "rsync", "--kind", "report")) == [report]
        assert ids(listed(env, tmp_path, "--search", "50%")) == [other]
        assert ids(listed(env, tmp_path, "--until", "2026-03-01T13:00")) == [backup]
        assert ids(listed(env, tmp_path, "--since", "2026-03-01 13:00:00Z")) == [other, report]
        bad = run_cli("jobs", "list", "--until", "yesterday", env=env, cwd=tmp_path)
        assert bad.returncode == 2 and "--until: 'yesterday' is neither" in bad.stderr


def test_no_match_is_a_sentence_not_an_empty_table(
    tmp_path: Path, db_url: str, table_prefix: str
) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    with clocked_store(db_url, table_prefix, start=datetime.now(UTC)) as (store, _clock):
        store.enqueue("orders", {"n": 1})
        done = run_cli("jobs", "list", "--kind", "invoices", env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "" and "no jobs match" in done.stderr
        found = run_cli("jobs", "list", "--kind", "orders", env=env, cwd=tmp_path)
        assert "orders" in found.stdout and "no jobs match" not in found.stderr
