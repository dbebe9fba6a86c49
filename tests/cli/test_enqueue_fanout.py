"""``migrate-cron enqueue KIND --ref REF`` and ``enqueue KIND --stdin``: fan-out of queue-only
kinds from the installed command, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from migrate_cron.store import Store
from tests.conftest import run_cli


@pytest.fixture
def env(db_url: str, table_prefix: str, store: Store, tmp_path: Path) -> dict[str, str]:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text('[jobs.nightly]\nschedule = "30 2 * * *"\ncommand = "true"\n'
                        '[jobs.export-order]\ncommand = "true"\nmax_attempts = 9\n')  # fmt: skip
    return {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
    }


def count(store: Store, kind: str) -> int:
    job = store.tables.job
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).where(job.c.kind == kind)).scalar_one())


def refs(store: Store, kind: str) -> set[str]:
    job = store.tables.job
    with store.engine.connect() as conn:
        return {r for (r,) in conn.execute(select(job.c.ref).where(job.c.kind == kind))}


def test_ten_thousand_lines_with_duplicates_give_the_distinct_refs_once(
    env: dict[str, str], store: Store
) -> None:
    rng = random.Random(16)
    distinct = [f"order-{n}" for n in range(8000)]
    ordered = distinct + [rng.choice(distinct) for _ in range(2000)]  # 20 % repeated refs
    rng.shuffle(ordered)
    text = "".join(json.dumps({"ref": r, "payload": {"order": r}}) + "\n" for r in ordered)

    first = run_cli("enqueue", "process-order", "--stdin", "--json", env=env, input=text,
                    timeout=300)  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {
        "schema_version": 1,
        "kind": "process-order",
        "lines": 10000,
        "created": 8000,
        "existing": 2000,
    }
    assert count(store, "process-order") == 8000
    assert refs(store, "process-order") == set(distinct)

    second = run_cli("enqueue", "process-order", "--stdin", env=env, input=text, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "0 new job(s), 10000 already enqueued" in second.stderr
    assert count(store, "process-order") == 8000


def test_a_bad_line_names_its_line_and_what_was_enqueued_before(
    env: dict[str, str], store: Store
) -> None:
    text = '{"ref": "a"}\n\n{"ref": "b", "payload": [1]}\n{"ref": "c", "pay": 1}\n{"ref": "d"}\n'
    result = run_cli("enqueue", "fan", "--stdin", env=env, input=text)
    message = " ".join(result.stderr.split())
    assert result.returncode == 2, result.stderr
    assert "<stdin>:4: unknown key(s) pay" in message
    assert "the 2 line(s) before it are enqueued (2 new job(s)), nothing after it" in message
    assert refs(store, "fan") == {"a", "b"}
    cases = [
        ("[1]", "not a JSON object"),
        ('{"ref": 5.5}', '"ref" must be'),
        ('{"ref": "x", "run_at": "soon"}', "\"run_at\": 'soon' is not an ISO 8601"),
        ("{", "not JSON"),
    ]
    for bad, reason in cases:
        result = run_cli("enqueue", "fan", "--stdin", env=env, input=bad + "\n")
        assert result.returncode == 2 and f"<stdin>:1: {reason}" in result.stderr


def test_one_ref_is_enqueued_once_with_its_payload_and_time(
    env: dict[str, str], store: Store
) -> None:
    args = ("enqueue", "send-invoice", "--ref", "8812", "--payload", '{"order": 8812}')
    first = run_cli(*args, "--run-at", "2030-01-02T03:04:05Z", env=env)
    second = run_cli(*args, "--json", env=env)
    assert (first.returncode, first.stdout) == (0, "enqueued\n"), first.stderr
    assert second.returncode == 0, second.stderr
    data = json.loads(second.stdout)
    assert (data["created"], data["ref"]) == (False, "8812")
    (job,) = store.list_jobs(kind="send-invoice")
    assert (job.id, job.ref, job.payload) == (data["job_id"], "8812", {"order": 8812})
    assert job.run_at == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert job.max_attempts == 5  # not in the registry: the default


def test_a_kind_in_the_registry_keeps_its_max_attempts(env: dict[str, str], store: Store) -> None:
    result = run_cli("enqueue", "export-order", "--stdin", env=env, input='{"ref": "1"}\n')
    assert result.returncode == 0, result.stderr
    (job,) = store.list_jobs(kind="export-order")
    assert job.max_attempts == 9


def test_an_outage_exits_75_and_says_nothing_was_spooled(tmp_path: Path) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": "postgresql://app:s3cret@127.0.0.1:1/app"}
    for args, text in [(("--stdin",), '{"ref": "1"}\n'), (("--ref", "1"), None)]:
        result = run_cli("enqueue", "fan", *args, env=env, input=text, cwd=tmp_path)
        assert result.returncode == 75, result.stderr
        assert "cannot use the database" in result.stderr
        assert "s3cret" not in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--ref", "1", "--slot", "2026-01-01T00:00"), "--slot is for registry jobs"),
        (("--payload", "{}"), "go with --ref"),
        (("--stdin", "--ref", "1"), "--stdin reads ref"),
        (("--ref", "1", "--payload", "{nope"), "--payload is not JSON"),
        (("--ref", "1", "--run-at", "tomorrow"), "ISO 8601"),
        (("--ref", ""), "1 to 255"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = run_cli("enqueue", "fan", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split())


def test_registry_slot_path_is_unchanged(env: dict[str, str]) -> None:
    assert run_cli("enqueue", "nightly", env=env).stdout == "enqueued\n"
    unknown = run_cli("enqueue", "not-in-registry", env=env)
    assert unknown.returncode == 2 and "no job 'not-in-registry'" in unknown.stderr
