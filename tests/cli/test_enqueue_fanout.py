"""``migrate-cron enqueue KIND --ref REF`` and ``enqueue KIND --stdin``: fan-out of queue-only
kinds from the installed command, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import json
import os
import random
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from migrate_cron.store import Store
from tests.conftest import cli_path, run_cli


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
        "skipped": 0,
        "bad_lines": [],
    }
    assert count(store, "process-order") == 8000
    assert refs(store, "process-order") == set(distinct)

    second = run_cli("enqueue", "process-order", "--stdin", env=env, input=text, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "0 new job(s), 10000 already enqueued" in second.stderr
    assert count(store, "process-order") == 8000


def test_a_bad_line_is_named_and_skipped_and_the_others_enqueued(
    env: dict[str, str], store: Store
) -> None:
    lines = [
        '{"ref": "a"}',
        "",
        '{"ref": "b", "payload": [1]}',
        '{"ref": "c", "pay": 1}',
        "[1]",
        '{"ref": 5.5}',
        '{"ref": "x", "run_at": "soon"}',
        "{",
        '{"ref": "d"}',
    ]
    result = run_cli("enqueue", "fan", "--stdin", env=env, input="\n".join(lines) + "\n")
    assert result.returncode == 65, result.stderr
    assert result.stderr.splitlines() == [
        "<stdin>:4: unknown key(s) pay (known: payload, ref, run_at)",
        '<stdin>:5: not a JSON object (expected {"ref": ..., "payload": ...})',
        '<stdin>:6: "ref" must be a string of 1 to 255 characters',
        "<stdin>:7: \"run_at\": 'soon' is not an ISO 8601 time (e.g. 2026-03-01T02:30:00Z)",
        "<stdin>:8: not JSON (Expecting property name enclosed in double quotes at column 2)",
        "fan: 3 line(s), 3 new job(s), 0 already enqueued, 5 bad line(s) skipped",
    ]
    assert refs(store, "fan") == {"a", "b", "d"}


def _feed(env: dict[str, str], data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``enqueue mixed --stdin`` fed raw bytes (``run_cli`` sends text)."""
    return subprocess.run(
        [cli_path(), "enqueue", "mixed", "--stdin", *args],
        input=data,
        capture_output=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def test_bad_input_costs_only_its_own_line_on_every_backend(
    env: dict[str, str], store: Store, backend: str
) -> None:
    """Invalid UTF-8, a lone surrogate escape, a NUL, a NaN, a line over 1 MiB (and over
    MariaDB's 16 MiB max_allowed_packet), nesting no parser takes, a time out of range, and
    what only the database refuses (MariaDB: JSON nested over 32 levels), amid 1,200 good
    lines in the same batches: every good line is enqueued, each bad one named with its line
    number, exit 65 (EX_DATAERR, not 75: no retry can fix it), no traceback."""
    bad = {
        7: b'{"ref": "utf8", "payload": "caf\xe9"}',
        150: b'{"ref": "surrogate", "payload": {"name": "\\ud800"}}',
        300: b'{"ref": "nul", "payload": ["a\\u0000b"]}',
        450: b'{"ref": "nan", "payload": NaN}',
        600: json.dumps({"ref": "huge", "payload": "x" * (17 << 20)}).encode(),
        750: b'{"ref": "deep", "payload": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        900: b'{"ref": "late", "run_at": "9999-12-31T23:00:00-05:00"}',
        1050: b'{"ref": "deep40", "payload": ' + b"[" * 40 + b"]" * 40 + b"}",
    }
    reasons = {
        7: "not UTF-8 (byte 0xe9 at column 32)",
        150: '"payload" holds a lone surrogate \\ud800, which is not Unicode text',
        300: '"payload" holds a NUL character (\\u0000), which PostgreSQL cannot store',
        450: "not JSON (NaN is not a JSON number)",
        600: f"longer than 1,048,576 bytes ({len(bad[600]):,})",
        750: "not JSON this parser can read (nested too deeply)",
        900: "\"run_at\": '9999-12-31T23:00:00-05:00' is out of range (years 1 to 9999 in UTC)",
    }
    if backend == "mariadb":
        reasons[1050] = "the database refused it: (4025, 'CONSTRAINT"
    lines, good = [], set()
    for number in range(1, 1211):
        if number in bad:
            lines.append(bad[number])
        else:
            good.add(f"g{number}")
            lines.append(
                json.dumps({"ref": f"g{number}", "payload": {"s": "\u2713 \u4e2d"}}).encode()
            )
    if backend != "mariadb":
        good.add("deep40")
    result = _feed(env, b"\n".join(lines) + b"\n")
    stderr = result.stderr.decode()
    assert result.returncode == 65, stderr[-3000:]
    assert "Traceback" not in stderr
    named = {int(line.split(":")[1]): line.split(": ", 1)[1] for line in stderr.splitlines()
             if line.startswith("<stdin>:")}  # fmt: skip
    assert sorted(named) == sorted(reasons)
    for number, reason in reasons.items():
        assert named[number].startswith(reason), (number, named[number])
    assert refs(store, "mixed") == good
    summary = f"mixed: {len(good)} line(s), {len(good)} new job(s), 0 already enqueued, "
    assert f"{summary}{len(reasons)} bad line(s) skipped" in stderr
    job = store.tables.job
    with store.engine.connect() as conn:
        payload = conn.execute(select(job.c.payload).where(job.c.ref == "g1")).scalar_one()
    assert payload == {"s": "\u2713 \u4e2d"}
    again = _feed(env, b"\n".join(lines) + b"\n", "--json")
    assert again.returncode == 65
    data = json.loads(again.stdout)
    assert (data["lines"], data["created"], data["existing"]) == (len(good), 0, len(good))
    assert data["skipped"] == len(reasons)
    assert [bad_line["line"] for bad_line in data["bad_lines"]] == list(named)


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
        (("--ref", "1", "--payload", "{nope"), "--payload: not JSON"),
        (("--ref", "1", "--payload", '"a\\u0000"'), '--payload: "payload" holds a NUL'),
        (("--ref", "1", "--payload", "[NaN]"), "--payload: not JSON (NaN is not"),
        (("--ref", "a\x01\udcff"), '--ref: "ref" holds a lone surrogate \\udcff'),
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
