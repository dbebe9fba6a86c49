"""``migrate-cron worker`` as users and supervisors run it: signals, exit codes, a worker
killed with SIGKILL, Python handlers from the registry and from --import, bad input."""

from __future__ import annotations

import json
import signal
from datetime import timedelta
from pathlib import Path
from typing import Any

from migrate_cron.store import Store
from tests.conftest import run_cli
from tests.worker.helpers import (
    kill_pids_from,
    pid_alive,
    spawn_cli_worker,
    stop_process,
    wait_for,
)


def _write_registry(dir: Path, body: str) -> None:
    (dir / "migrate-cron.toml").write_text(body)


def _db_args(db_url: str, table_prefix: str) -> list[str]:
    return ["--database-url", db_url, "--table-prefix", table_prefix]


def _job(store: Store, job_id: int) -> Any:
    job = store.get(job_id)
    assert job is not None
    return job


def test_sigterm_lets_running_jobs_finish_and_releases_the_rest(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    _write_registry(
        tmp_path,
        '[jobs.slow]\ncommand = "touch started-$MIGRATE_CRON_JOB_ID; sleep 1; '
        'touch finished-$MIGRATE_CRON_JOB_ID"\ncwd = "."\n',
    )
    ids = [store.enqueue("slow").job_id for _ in range(6)]
    proc, log = spawn_cli_worker(
        "--concurrency",
        "2",
        "--batch",
        "6",
        "--grace",
        "30",
        "--poll",
        "0.1",
        *_db_args(db_url, table_prefix),
        cwd=tmp_path,
    )
    try:
        wait_for(lambda: len(list(tmp_path.glob("started-*"))) == 2, 30, what="2 jobs running")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        stop_process(proc)
    jobs = [_job(store, i) for i in ids]
    done = [j for j in jobs if j.state == "done"]
    reopened = [j for j in jobs if j.state == "open"]
    assert len(done) == 2 and len(reopened) == 4, [(j.id, j.state) for j in jobs]
    assert all((tmp_path / f"finished-{j.id}").exists() for j in done)
    assert all(j.attempts == 0 and j.locked_by is None for j in reopened)
    assert store.list_jobs(state="running") == []
    text = log.read_text()
    assert "waiting up to 30s for 2 running job(s)" in text and "worker-stop" in text


def test_after_the_grace_running_commands_are_killed_and_released(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    _write_registry(tmp_path, '[jobs.hang]\ncommand = "echo $$ > pid; exec sleep 100"\ncwd = "."\n')
    job_id = store.enqueue("hang").job_id
    proc, log = spawn_cli_worker("--grace", "0.5", *_db_args(db_url, table_prefix), cwd=tmp_path)
    pid_file = tmp_path / "pid"
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 30, what="running")
        pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
        assert not pid_alive(pid)
    finally:
        stop_process(proc)
        kill_pids_from(pid_file)
    job = _job(store, job_id)
    assert (job.state, job.attempts, job.locked_by) == ("open", 0, None)


def test_second_signal_stops_at_once(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    _write_registry(
        tmp_path,
        "[jobs.stubborn]\n"
        'command = "trap \'\' TERM; echo $$ > pid; while :; do sleep 0.1; done"\ncwd = "."\n',
    )
    job_id = store.enqueue("stubborn").job_id
    proc, log = spawn_cli_worker("--grace", "600", *_db_args(db_url, table_prefix), cwd=tmp_path)
    pid_file = tmp_path / "pid"
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 30, what="running")
        pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: "waiting up to 600s" in log.read_text(), 30, what="grace started")
        assert proc.poll() is None  # still within the 600 s grace
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()
        assert not pid_alive(pid)  # SIGTERM was trapped: it took the SIGKILL
    finally:
        stop_process(proc)
        kill_pids_from(pid_file)
    job = _job(store, job_id)
    assert (job.state, job.attempts) == ("open", 0)
    assert "SIGKILL" in log.read_text()


def test_sigkilled_worker_job_runs_again_and_its_late_complete_changes_nothing(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    _write_registry(
        tmp_path,
        '[jobs.long]\ncommand = "echo $$ >> pids; echo $MIGRATE_CRON_ATTEMPT >> attempts; '
        'exec sleep 100"\ncwd = "."\n',
    )
    job_id = store.enqueue("long").job_id
    args = [
        "--heartbeat",
        "0.5",
        "--lease",
        "1.5",
        "--grace",
        "0",
        "--poll",
        "0.2",
        *_db_args(db_url, table_prefix),
    ]
    first, _ = spawn_cli_worker(*args, cwd=tmp_path)
    second = None
    attempts = tmp_path / "attempts"
    try:
        wait_for(lambda: attempts.exists() and attempts.read_text().split() == ["1"], 30)
        dead_worker = _job(store, job_id).locked_by
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        second, log = spawn_cli_worker(*args, cwd=tmp_path)
        # Within lease (1.5 s) + reap interval (0.5 s) of the last heartbeat; the deadline here
        # is generous because the machine is shared — speed is for the benchmarks.
        wait_for(lambda: attempts.read_text().split() == ["1", "2"], 60, what="run again")
        job = _job(store, job_id)
        assert job.state == "running" and job.locked_by not in (None, dead_worker)
        # The killed worker's late write: fenced out.
        assert store.complete(dead_worker, [job_id]) == 0
        assert store.fail(dead_worker, job_id, "late") is None
        after = _job(store, job_id)
        assert (after.state, after.locked_by, after.attempts) == ("running", job.locked_by, 2)
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0, log.read_text()
    finally:
        stop_process(first)
        if second is not None:
            stop_process(second)
        kill_pids_from(tmp_path / "pids")


def test_python_handlers_from_registry_and_import(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    (tmp_path / "t_app_jobs.py").write_text(
        "from migrate_cron.handlers import handler\n"
        "def export(payload, ctx):\n"
        "    return f'exported {payload[\"n\"]} slot={ctx.scheduled_for}'\n"
        "@handler('t-mail')\n"
        "def mail(payload, ctx):\n"
        "    return f'mailed {payload} attempt {ctx.attempt}'\n"
    )
    _write_registry(tmp_path, '[jobs.export]\nhandler = "t_app_jobs:export"\n')
    exported = store.enqueue("export", {"n": 3}).job_id
    mailed = store.enqueue("t-mail", "bob").job_id
    result = run_cli(
        "worker",
        "--once",
        "--json-logs",
        "--import",
        "t_app_jobs",
        *_db_args(db_url, table_prefix),
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert _job(store, exported).output == "exported 3 slot=None"
    assert _job(store, mailed).output == "mailed bob attempt 1"
    events = [json.loads(line) for line in result.stderr.splitlines()]
    finishes = [e for e in events if e["event"] == "finish"]
    assert {(e["kind"], e["outcome"]) for e in finishes} == {("export", "done"), ("t-mail", "done")}
    assert all({"id", "attempt", "duration"} <= set(e) for e in finishes)


def test_bad_input_is_a_usage_error(db_url: str, table_prefix: str, tmp_path: Path) -> None:
    _write_registry(tmp_path, '[jobs.a]\ncommand = "true"\n')
    db = _db_args(db_url, table_prefix)
    bad_lease = run_cli("worker", "--heartbeat", "10", "--lease", "5", *db, cwd=tmp_path)
    assert bad_lease.returncode == 2 and "--lease (5s) must be longer" in bad_lease.stderr
    unknown_kind = run_cli("worker", "--kinds", "a,zzz", *db, cwd=tmp_path)
    assert unknown_kind.returncode == 2 and "zzz" in unknown_kind.stderr
    no_registry = run_cli("worker", "--registry", "missing.toml", *db, cwd=tmp_path)
    assert no_registry.returncode == 2 and "missing.toml" in no_registry.stderr
    assert "Traceback" not in bad_lease.stderr + unknown_kind.stderr + no_registry.stderr


def test_broken_handler_reference_names_job_and_key(tmp_path: Path) -> None:
    _write_registry(tmp_path, '[jobs.exp]\nhandler = "no_such_module_zz:run"\n')
    result = run_cli("worker", "--database-url", f"sqlite:///{tmp_path}/q.db", cwd=tmp_path)
    assert result.returncode == 1
    assert "job 'exp': key 'handler'" in result.stderr and "no_such_module_zz" in result.stderr


def test_unreachable_database_fails_fast_without_the_password(tmp_path: Path) -> None:
    _write_registry(tmp_path, '[jobs.a]\ncommand = "true"\n')
    result = run_cli(
        "worker",
        "--once",
        "--database-url",
        "postgresql://u:s3cret@127.0.0.1:1/db",
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1
    assert "s3cret" not in result.stderr and "***" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_tables_say_what_to_run(tmp_path: Path) -> None:
    _write_registry(tmp_path, '[jobs.a]\ncommand = "true"\n')
    result = run_cli(
        "worker", "--once", "--database-url", f"sqlite:///{tmp_path}/empty.db", cwd=tmp_path
    )
    assert result.returncode == 1 and "db upgrade" in result.stderr


def test_help_lists_the_options() -> None:
    result = run_cli("worker", "--help")
    assert result.returncode == 0
    for option in (
        "--concurrency",
        "--kinds",
        "--batch",
        "--lease",
        "--heartbeat",
        "--grace",
        "--once",
        "--json-logs",
        "--import",
        "--database-url",
    ):
        assert option in result.stdout


def test_python_handler_that_ignores_the_stop_is_released_and_the_worker_exits(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    (tmp_path / "t_stuck_jobs.py").write_text(
        "import pathlib, time\n"
        "from migrate_cron.handlers import handler\n"
        "@handler('t-stuck')\n"
        "def stuck(payload, ctx):\n"
        "    pathlib.Path('running').touch()\n"
        "    while True:\n"
        "        time.sleep(0.05)\n"
    )
    job_id = store.enqueue("t-stuck").job_id
    proc, log = spawn_cli_worker(
        "--grace",
        "0.5",
        "--import",
        "t_stuck_jobs",
        *_db_args(db_url, table_prefix),
        cwd=tmp_path,
    )
    try:
        wait_for((tmp_path / "running").exists, 30, what="handler running")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        stop_process(proc)
    job = _job(store, job_id)
    assert (job.state, job.attempts, job.locked_by) == ("open", 0, None)
    assert "did not return; released their jobs" in log.read_text()


def test_a_kind_no_worker_can_run_waits_and_status_check_flags_it(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    _write_registry(tmp_path, '[jobs.known]\ncommand = "true"\n')
    ghost = store.enqueue("ghost", run_at=store.db_now() - timedelta(minutes=10)).job_id
    known = store.enqueue("known").job_id
    db = _db_args(db_url, table_prefix)
    done = run_cli("worker", "--once", *db, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "kinds=known" in done.stderr  # the start line says what this worker claims
    assert _job(store, known).state == "done"
    waiting = _job(store, ghost)
    assert (waiting.state, waiting.attempts) == ("open", 0)  # not shelved: it waits
    check = run_cli("status", "--check", "--max-age", "5m", *db, cwd=tmp_path, timeout=60)
    assert check.returncode == 1 and "ghost" in check.stdout + check.stderr, check


def test_jobs_cancel_stops_a_running_command_with_sigterm_first(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    _write_registry(
        tmp_path,
        "[jobs.stoppable]\n"
        "command = \"echo $$ > pid; trap 'echo term > got-term; exit 0' TERM; "
        'sleep 30 & wait"\ncwd = "."\n',
    )
    job_id = store.enqueue("stoppable").job_id
    db = _db_args(db_url, table_prefix)
    proc, log = spawn_cli_worker("--heartbeat", "1", *db, cwd=tmp_path)
    try:
        wait_for(lambda: (tmp_path / "pid").exists(), 30, what="the job to start")
        cancel = run_cli("jobs", "cancel", str(job_id), "--yes", *db, cwd=tmp_path, timeout=60)
        assert cancel.returncode == 0, cancel.stderr
        assert "SIGTERM" in cancel.stderr
        # The command got SIGTERM (its trap ran), not a SIGKILL out of the blue.
        wait_for(lambda: (tmp_path / "got-term").exists(), 30, what="SIGTERM to reach the job")
        assert _job(store, job_id).state == "cancelled"  # its result is ignored
        assert "cancelled by an operator" in log.read_text()
    finally:
        stop_process(proc)
        kill_pids_from(tmp_path / "pid")
