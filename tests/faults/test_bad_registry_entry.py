"""One bad registry entry stops nothing but itself (issue 30, items 4 and 7).

Job ``b`` has ``backoff = 60`` (a table is wanted) and job ``nul`` a command with a NUL byte
(no process can start with one): before, ``enqueue a`` exited 1 for ``b``'s sake — every
migrated line on the host stopped enqueuing — and ``nul`` loaded fine, then burnt all its
attempts in 40 ms. Now ``a`` is enqueued, run and scheduled as if nothing were wrong; ``b``'s
cron run is spooled (exit 75, one line naming file:line, job and key) and enqueued once ``b``
is fixed; the worker and the scheduler say once which entries they leave, and never claim
them; ``verify`` fails on them. The installed command, on SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import json
from pathlib import Path

from migrate_cron.store import Store
from tests.conftest import run_cli

REGISTRY = """\
[jobs.a]
command = "true"
schedule = "*/5 * * * *"
mode = "scheduler"

[jobs.b]
command = "true"
schedule = "*/5 * * * *"
max_attempts = 2
# the mistake: backoff takes a table
backoff = 60

[jobs.nul]
command = "echo \\u0000"
"""


def _env(db_url: str, prefix: str, tmp_path: Path) -> dict[str, str]:
    return {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
        "MIGRATE_CRON_REGISTRY": str(tmp_path / "migrate-cron.toml"),
        "MIGRATE_CRON_SPOOL": str(tmp_path / "spool"),
    }


def test_one_bad_entry_costs_only_its_own_runs_and_they_come_back_when_fixed(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    env = _env(db_url, table_prefix, tmp_path)
    b_error = f"{registry}:11: job 'b': key 'backoff': must be a table, not 60"

    good = run_cli("enqueue", "a", "--slot", "2026-03-01T02:30", env=env)
    assert good.returncode == 0 and good.stdout == "enqueued\n", good.stderr

    bad = run_cli("enqueue", "b", "--slot", "2026-03-01T02:30", env=env)
    assert bad.returncode == 75, bad.stderr
    assert len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr
    assert b_error in bad.stderr and "spooled to" in bad.stderr
    (waiting,) = json.loads(run_cli("spool", "list", "--json", env=env).stdout)["slots"]
    assert (waiting["job"], waiting["resolved"], waiting["slot_arg"]) == (
        "b",
        False,
        "2026-03-01T02:30",
    )

    # The worker runs a, says once why it leaves b and nul, and never claims them.
    b_job = store.enqueue("b", run_at=store.db_now()).job_id
    nul_job = store.enqueue("nul", run_at=store.db_now()).job_id
    worker = run_cli("worker", "--once", env=env, timeout=120)
    assert worker.returncode == 0, worker.stderr
    said = worker.stdout + worker.stderr
    assert "registry-error" in said and b_error in said
    assert "job 'nul': key 'command': holds a NUL byte" in said
    assert [j.state for j in store.list_jobs(kind="a")] == ["done"]
    for job_id in (b_job, nul_job):
        job = store.get(job_id)
        assert job is not None and (job.state, job.attempts) == ("open", 0), job

    # The scheduler schedules a, and says it leaves b.
    sched = run_cli("scheduler", "--once", "--now", "2026-03-01T03:00:05Z", env=env)
    assert sched.returncode == 0, sched.stderr
    assert b_error in sched.stderr
    assert "2026-03-01 03:00" in [str(r["scheduled_for"])[:16] for r in store.runs("a")]

    # verify fails on the registry (a itself is fine).
    verify = run_cli("verify", "a", "--json", env=env, timeout=120)
    assert verify.returncode == 1, verify.stderr
    (check,) = [c for c in json.loads(verify.stdout)["checks"] if c["key"] == "registry"]
    assert check["status"] == "fail" and any(b_error in d for d in check["details"])

    # Fixed: the next enqueue of any job replays b's run, resolved as it would have been.
    registry.write_text(REGISTRY.replace("backoff = 60", "backoff = { base = 60 }"))
    again = run_cli("enqueue", "a", "--slot", "2026-03-01T02:35", env=env)
    assert again.returncode == 0, again.stderr
    runs = [str(r["scheduled_for"])[:16] for r in store.runs("b")]
    assert runs == ["2026-03-01 02:30"]
    assert {j.max_attempts for j in store.list_jobs(kind="b") if j.scheduled_for} == {2}
    assert json.loads(run_cli("spool", "list", "--json", env=env).stdout)["count"] == 0


def test_a_syntax_error_costs_only_the_runs_of_the_entry_it_is_in(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text('[jobs.a]\ncommand = "true"\n\n[jobs.b]\ncommand = \n')
    env = _env(db_url, table_prefix, tmp_path)
    good = run_cli("enqueue", "a", "--slot", "2026-03-01T02:30", env=env)
    assert good.returncode == 0, good.stderr  # only a's table is read
    bad = run_cli("enqueue", "b", "--slot", "2026-03-01T02:30", env=env)
    assert bad.returncode == 75 and "invalid TOML" in bad.stderr, bad.stderr
    assert f"{registry}: invalid TOML" in bad.stderr and "line 5" in bad.stderr
    # The worker cannot read such a file at all: one line, exit 1, as before.
    worker = run_cli("worker", "--once", env=env, timeout=120)
    assert worker.returncode == 1 and worker.stderr.startswith(f"error: {registry}: invalid TOML")
    assert [str(r["scheduled_for"])[:16] for r in store.runs("a")] == ["2026-03-01 02:30"]
    # b's header broken ("[jobs.b" without its "]"): a's tables still end where b's begin.
    registry.write_text('[jobs.a]\ncommand = "true"\n\n[jobs.b\ncommand = "true"\n')
    good = run_cli("enqueue", "a", "--slot", "2026-03-01T02:35", env=env)
    assert good.returncode == 0, good.stderr
    bad = run_cli("enqueue", "b", "--slot", "2026-03-01T02:35", env=env)
    assert bad.returncode == 75 and f"{registry}: invalid TOML" in bad.stderr, bad.stderr
    assert sorted(str(r["scheduled_for"])[:16] for r in store.runs("a")) == [
        "2026-03-01 02:30",
        "2026-03-01 02:35",
    ]


def test_fan_out_is_not_stopped_by_another_entry_s_error(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """``enqueue KIND --ref/--stdin`` reads the registry only for KIND's own max_attempts:
    ``b``'s mistake used to stop every fan-out on the host (exit 1, nothing enqueued)."""
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY.replace("[jobs.a]\n", "[jobs.a]\nmax_attempts = 7\n"))
    env = _env(db_url, table_prefix, tmp_path)

    lines = '{"ref": "1"}\n{"ref": "2"}\n'
    queue_only = run_cli("enqueue", "orders", "--stdin", env=env, input=lines)
    assert queue_only.returncode == 0, queue_only.stderr
    one = run_cli("enqueue", "orders", "--ref", "3", env=env)
    assert one.returncode == 0 and one.stdout == "enqueued\n", one.stderr
    assert sorted((j.ref, j.max_attempts) for j in store.list_jobs(kind="orders")) == [
        ("1", 5),
        ("2", 5),
        ("3", 5),
    ]
    # A kind with an entry of its own keeps that entry's max_attempts.
    own = run_cli("enqueue", "a", "--ref", "x", env=env)
    assert own.returncode == 0, own.stderr
    assert [j.max_attempts for j in store.list_jobs(kind="a")] == [7]
    # The bad entry's own fan-out is refused in one line, nothing enqueued.
    bad = run_cli("enqueue", "b", "--ref", "x", env=env)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert f"{registry}:12: job 'b': key 'backoff'" in bad.stderr
    assert store.list_jobs(kind="b") == []
