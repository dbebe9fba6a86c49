"""``migrate-cron jobs list|show|retry|cancel`` from the installed command, with the real
worker (``migrate-cron worker --once``) running what was retried and never what was cancelled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.store import Store, open_store
from tests.conftest import run_cli

REGISTRY = """
[jobs.flaky]
command = "true"

[jobs.other]
command = "true"
"""


@pytest.fixture
def env(store: Store, db_url: str, table_prefix: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    (tmp_path / "migrate-cron.toml").write_text(REGISTRY)
    yield {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}


def failed_jobs(store: Store, kind: str, n: int) -> list[int]:
    ids = [store.enqueue(kind, {"n": i}, max_attempts=1).job_id for i in range(n)]
    for job in store.claim("w", n, kinds=[kind]):
        store.fail("w", job.id, f"exit 1\nTraceback: job {job.id} broke", output="a\nb\nc\nd")
    return ids


def cli(
    *args: str, env: dict[str, str], cwd: Path, input: str | None = None
) -> tuple[int, str, str]:
    result = run_cli(*args, env=env, cwd=cwd, timeout=120, input=input)
    return result.returncode, result.stdout, " ".join(result.stderr.split())


def worker_once(env: dict[str, str], cwd: Path) -> None:
    rc, out, err = cli("worker", "--once", "--poll", "0.1", env=env, cwd=cwd)
    assert rc == 0, out + err


def test_retry_all_failed_then_a_worker_run_finishes_them(
    store: Store, env: dict[str, str], tmp_path: Path
) -> None:
    ids = failed_jobs(store, "flaky", 3) + failed_jobs(store, "other", 2)

    # Without a terminal and without --yes: refuse, change nothing.
    rc, out, err = cli("jobs", "retry", "--all-failed", env=env, cwd=tmp_path, input="y\n")
    assert rc == 2 and "pass --yes" in err, err
    assert store.count_jobs(states=["failed"]) == 5

    rc, out, err = cli("jobs", "retry", "--all-failed", "--yes", env=env, cwd=tmp_path)
    assert rc == 0, err
    assert out == "retried 5 jobs\n"
    for job_id in ids:
        job = store.get(job_id)
        assert job is not None and (job.state, job.attempts) == ("open", 0)

    worker_once(env, tmp_path)
    assert {store.get(i).state for i in ids} == {"done"}  # type: ignore[union-attr]

    rc, out, err = cli("jobs", "retry", "--all-failed", "--yes", "--json", env=env, cwd=tmp_path)
    assert rc == 0 and json.loads(out) == {"schema_version": 1, "retried": 0, "skipped": 0}


def test_retry_by_kind_and_by_id(store: Store, env: dict[str, str], tmp_path: Path) -> None:
    flaky = failed_jobs(store, "flaky", 2)
    other = failed_jobs(store, "other", 2)
    rc, out, err = cli("jobs", "retry", "--kind", "flaky", "--yes", env=env, cwd=tmp_path)
    assert (rc, out) == (0, "retried 2 jobs\n"), err
    assert {store.get(i).state for i in other} == {"failed"}  # type: ignore[union-attr]

    # One retryable id, one that is open, one that does not exist.
    rc, out, err = cli(
        "jobs",
        "retry",
        str(other[0]),
        str(flaky[0]),
        "424242",
        "--yes",
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert rc == 0, err
    assert json.loads(out) == {"schema_version": 1, "retried": 1, "skipped": 2}
    assert "2 of the given ids were skipped" in err

    rc, out, err = cli("jobs", "retry", "424242", "--yes", env=env, cwd=tmp_path)
    assert rc == 1 and out == "retried 0 jobs\n"


def test_cancelled_jobs_are_never_run_by_the_worker(
    store: Store, env: dict[str, str], tmp_path: Path
) -> None:
    ids = [store.enqueue("flaky", {"i": i}).job_id for i in range(4)]
    cancel, keep = ids[:2], ids[2:]
    rc, out, err = cli("jobs", "cancel", *map(str, cancel), env=env, cwd=tmp_path)
    assert rc == 2 and "pass --yes" in err
    rc, out, err = cli("jobs", "cancel", *map(str, cancel), "--yes", env=env, cwd=tmp_path)
    assert (rc, out) == (0, "cancelled 2 jobs\n"), err

    worker_once(env, tmp_path)
    for job_id in cancel:
        job = store.get(job_id)
        assert job is not None and (job.state, job.started_at, job.attempts) == (
            "cancelled",
            None,
            0,
        )
    assert {store.get(i).state for i in keep} == {"done"}  # type: ignore[union-attr]

    rc, out, err = cli("jobs", "cancel", str(keep[0]), "--yes", env=env, cwd=tmp_path)
    assert rc == 1 and "not open, running or failed" in err


def test_list_and_show(store: Store, env: dict[str, str], tmp_path: Path) -> None:
    [fid] = failed_jobs(store, "flaky", 1)
    open_id = store.enqueue("other", {"to": "ops@example.com"}).job_id

    rc, out, err = cli("jobs", "list", "--state", "failed", "--json", env=env, cwd=tmp_path)
    assert rc == 0, err
    assert [j["id"] for j in json.loads(out)["jobs"]] == [fid]
    rc, out, err = cli(
        "jobs", "list", "--kind", "other", "--limit", "5", "--json", env=env, cwd=tmp_path
    )
    assert [(j["id"], j["state"]) for j in json.loads(out)["jobs"]] == [(open_id, "open")]
    rc, out, err = cli("jobs", "list", env=env, cwd=tmp_path)
    assert rc == 0 and "flaky" in out and "other" in out and "exit 1" in out

    rc, out, err = cli("jobs", "show", str(fid), "--tail", "2", env=env, cwd=tmp_path)
    assert rc == 0, err
    for text in (
        '"n": 0',
        "attempts:      1 of 1",
        f"Traceback: job {fid} broke",
        "output (last 2 of 4 lines)",
        "  c\n  d\n",
        "finished_at:",
        "started_at:",
    ):
        assert text in out, text
    assert "  a\n" not in out
    rc, out, err = cli("jobs", "show", str(open_id), "--json", env=env, cwd=tmp_path)
    job = json.loads(out)
    assert (job["payload"], job["state"], job["attempts"]) == ({"to": "ops@example.com"}, "open", 0)

    rc, out, err = cli("jobs", "show", "999999", env=env, cwd=tmp_path)
    assert rc == 1 and "no job with id 999999" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("jobs", "list", "--state", "broken"), "--state: 'broken' is not one of"),
        (("jobs", "retry"), "name what to retry"),
        (("jobs", "retry", "1", "--all-failed"), "name what to retry"),
        (("jobs", "retry", "--kind", "a", "--all-failed"), "name what to retry"),
        (("jobs", "show", "abc"), "integer"),
        (("jobs", "cancel"), "Missing argument"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}"}
    store = open_store(env["MIGRATE_CRON_DATABASE_URL"])
    store.create_schema()
    store.dispose()
    rc, out, err = cli(*args, env=env, cwd=tmp_path)
    assert rc == 2, out + err
    assert message in err and "Traceback" not in err


def test_show_lists_each_recorded_run(store: Store, db_url: str, tmp_path: Path) -> None:
    """A run that failed, an operator's retry, a run that passed: both runs are in the history
    with their exit codes and the run's own duration, in text and in ``--json``."""
    marker = tmp_path / "ran-once"
    (tmp_path / "migrate-cron.toml").write_text(
        "[jobs.second-time-lucky]\n"
        f'command = "test -f {marker} || {{ touch {marker}; echo first; exit 3; }}; sleep 0.2"\n'
        "max_attempts = 1\n"
    )
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": store.prefix}
    job_id = store.enqueue("second-time-lucky", max_attempts=1).job_id
    worker_once(env, tmp_path)
    rc, _, err = cli("jobs", "retry", str(job_id), "--yes", env=env, cwd=tmp_path)
    assert rc == 0, err
    worker_once(env, tmp_path)

    rc, out, err = cli("jobs", "show", str(job_id), env=env, cwd=tmp_path)
    assert rc == 0, err
    assert "runs (2 recorded):" in out
    first, second = out.split("runs (2 recorded):\n")[1].splitlines()
    assert first.startswith("  #1 ") and " failed exit=3 on " in first and "exit code 3" in first
    assert second.startswith("  #1 ") and " done exit=0 on " in second
    assert max(len(line) for line in (first, second)) <= 80 + 40  # worker ids are long

    rc, out, err = cli("jobs", "show", str(job_id), "--json", env=env, cwd=tmp_path)
    runs = json.loads(out)["attempt_history"]
    assert [(r["attempt"], r["outcome"], r["exit_code"]) for r in runs] == [
        (1, "failed", 3),
        (1, "done", 0),
    ]
    assert runs[0]["output_tail"].strip() == "first"
    assert runs[1]["duration"] >= 0.2 and runs[1]["started_at"].endswith("Z")
    assert runs[0]["started_at"] < runs[1]["started_at"]


def test_a_database_without_the_history_table_still_runs_jobs(
    store: Store, env: dict[str, str], tmp_path: Path
) -> None:
    """The package was upgraded before ``db upgrade``: runs go on, the worker says why the
    history stays empty, and ``jobs show`` shows no runs rather than failing."""
    store.tables.attempts.drop(store.engine)
    job_id = store.enqueue("flaky").job_id
    rc, out, err = cli("worker", "--once", "--poll", "0.1", env=env, cwd=tmp_path)
    assert rc == 0, out + err
    assert "job_attempts table is missing" in out + err and "db upgrade" in out + err
    assert store.get(job_id).state == "done"  # type: ignore[union-attr]
    rc, out, err = cli("jobs", "show", str(job_id), env=env, cwd=tmp_path)
    assert rc == 0 and "runs (0 recorded):" in out, err
    store.tables.attempts.create(store.engine)  # the fixture drops every table
