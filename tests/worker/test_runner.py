"""Legacy commands run like cron runs them — no database needed for these."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from migrate_cron.registry import JobSpec
from migrate_cron.worker.cancel import SHUTDOWN, Cancel
from migrate_cron.worker.outcome import DONE, FAILED, RELEASE
from migrate_cron.worker.runner import Tail, command_outcome, cron_environment, run_command
from tests.worker.helpers import kill_pids_from, make_job, pid_alive, wait_for


def _run(spec: JobSpec, job=None, cancel: Cancel | None = None, **kw):  # type: ignore[no-untyped-def]
    result = run_command(spec, job or make_job(), cancel or Cancel(), **kw)
    return result, command_outcome(result, spec.timeout)


def test_environment_is_cron_minimal_plus_job_env_and_row_data(tmp_path: Path) -> None:
    slot = datetime(2026, 3, 1, 2, 30, tzinfo=UTC)
    job = make_job(
        job_id=42, payload={"order": "O'Brien; rm -rf /"}, attempts=2, scheduled_for=slot
    )
    spec = JobSpec(
        name="k", command="env > env.txt", env={"MAILTO": "ops@x", "FOO": "a b"}, cwd=str(tmp_path)
    )
    os.environ["MIGRATE_CRON_TEST_LEAK"] = "should-not-appear"
    try:
        _, outcome = _run(spec, job)
    finally:
        del os.environ["MIGRATE_CRON_TEST_LEAK"]
    assert outcome.status == DONE
    env = dict(
        line.split("=", 1)
        for line in (tmp_path / "env.txt").read_text().splitlines()
        if "=" in line
    )
    assert env["PATH"] == "/usr/bin:/bin" and env["SHELL"] == "/bin/sh"
    assert env["HOME"] and env["LOGNAME"]
    assert env["MAILTO"] == "ops@x" and env["FOO"] == "a b"
    assert env["MIGRATE_CRON_JOB_ID"] == "42" and env["MIGRATE_CRON_ATTEMPT"] == "2"
    assert env["MIGRATE_CRON_SCHEDULED_FOR"] == "2026-03-01T02:30:00+00:00"
    assert json.loads(env["MIGRATE_CRON_PAYLOAD"]) == {"order": "O'Brien; rm -rf /"}
    assert "MIGRATE_CRON_TEST_LEAK" not in env


def test_row_data_cannot_override_our_variables() -> None:
    spec = JobSpec(name="k", command="true", env={"MIGRATE_CRON_JOB_ID": "999"})
    assert cron_environment(spec, make_job(job_id=5))["MIGRATE_CRON_JOB_ID"] == "5"


def test_stdin_cwd_and_shell_come_from_the_spec(tmp_path: Path) -> None:
    spec = JobSpec(
        name="k",
        command="pwd; cat; echo $0",
        stdin="line 1\nline 2 100%\n",
        cwd=str(tmp_path),
        shell="/bin/bash",
    )
    _, outcome = _run(spec)
    assert outcome.status == DONE
    assert outcome.output == f"{tmp_path}\nline 1\nline 2 100%\n/bin/bash\n"


def test_default_cwd_is_home_like_cron() -> None:
    _, outcome = _run(JobSpec(name="k", command="pwd"))
    assert (
        outcome.output
        == cron_environment(JobSpec(name="k", command="x"), make_job())["HOME"] + "\n"
    )


def test_a_missing_directory_runs_in_the_fallback_and_says_so(tmp_path: Path) -> None:
    """Debian's cron and busybox: the home vanished after generate; cron's own directory."""
    gone, spool = tmp_path / "home-gone", tmp_path / "spool"
    spool.mkdir()
    spec = JobSpec(name="k", command="pwd", cwd=str(gone), cwd_fallback=str(spool))
    _, outcome = _run(spec)
    assert outcome.status == DONE and outcome.output == f"{spool}\n"
    assert outcome.note == f"{gone} (cwd) does not exist: ran in {spool} (cwd_fallback)"
    # The home is back: the check is made at each run, the fallback is not remembered.
    gone.mkdir()
    _, outcome = _run(spec)
    assert outcome.output == f"{gone}\n" and outcome.note is None


@pytest.mark.parametrize("fallback", [None, "/no/such/spool"])
def test_a_missing_home_without_a_usable_fallback_fails_at_once(fallback: str | None) -> None:
    """cronie (no fallback), or a host without cron's directory: not run, not retried."""
    spec = JobSpec(name="k", command="true", env={"HOME": "/no/such/home"}, cwd_fallback=fallback)
    result, outcome = _run(spec, job=make_job(job_id=7))
    assert result.returncode is None and result.permanent
    assert outcome.status == FAILED and outcome.terminal and outcome.error is not None
    assert "not run:" in outcome.error and "/no/such/home (HOME)" in outcome.error
    assert "`migrate-cron jobs retry 7`" in outcome.error
    if fallback:
        assert f"nor its cwd_fallback {fallback} exists" in outcome.error
    else:
        assert "has no cwd_fallback (cronie does not run such a job either)" in outcome.error


def test_exit_code_and_stderr_tail_in_the_error() -> None:
    spec = JobSpec(name="k", command="echo to-out; echo first >&2; echo 'disk full' >&2; exit 3")
    _, outcome = _run(spec)
    assert outcome.status == FAILED
    assert outcome.error is not None and outcome.error.startswith("exit code 3; stderr: ")
    assert "disk full" in outcome.error
    assert outcome.output == "to-out\n[stderr]\nfirst\ndisk full\n"


def test_signal_death_is_named() -> None:
    _, outcome = _run(JobSpec(name="k", command="kill -SEGV $$"))
    assert outcome.status == FAILED and outcome.error == "killed by signal SIGSEGV (11)"


def test_output_is_capped_to_its_tail() -> None:
    spec = JobSpec(name="k", command="head -c 300000 /dev/zero | tr '\\0' a; echo END")
    result, outcome = _run(spec, output_cap=1000)
    assert outcome.status == DONE
    assert result.stdout.endswith("aaaaEND\n")
    assert result.stdout.startswith("[… ") and "bytes dropped]" in result.stdout
    assert len(result.stdout) < 1100


def test_tail_keeps_the_last_bytes() -> None:
    tail = Tail(4)
    for chunk in (b"abc", b"defgh", b"ij"):
        tail.add(chunk)
    assert tail.text() == "[… 6 bytes dropped]\nghij"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    spec = JobSpec(
        name="k",
        command=f"sleep 100 & echo $! >> {pids}; echo $$ >> {pids}; sleep 100",
        timeout=0.5,
    )
    try:
        _, outcome = _run(spec, kill_grace=2.0)
        assert outcome.status == FAILED
        assert outcome.error is not None and outcome.error.startswith("timed out after 0.5s")
        recorded = [int(p) for p in pids.read_text().split()]
        assert len(recorded) == 2
        wait_for(lambda: not any(pid_alive(p) for p in recorded), 10, what="group gone")
    finally:
        kill_pids_from(pids)


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    spec = JobSpec(
        name="k",
        command=f"trap '' TERM; echo $$ > {pids}; while :; do sleep 0.05; done",
        timeout=0.3,
    )
    try:
        result, _ = _run(spec, kill_grace=0.3)
        assert result.timed_out and result.returncode == -9
        assert not pid_alive(int(pids.read_text()))
    finally:
        kill_pids_from(pids)


def test_cancel_stops_the_command_and_asks_for_release(tmp_path: Path) -> None:
    import threading

    started = tmp_path / "started"
    cancel = Cancel()
    spec = JobSpec(name="k", command=f"echo $$ > {started}; exec sleep 100")
    timer = threading.Thread(
        target=lambda: (wait_for(started.exists, 10), cancel.set(SHUTDOWN, hard=True))
    )
    timer.start()
    try:
        result, outcome = _run(spec, cancel=cancel)
        timer.join()
        assert result.cancelled and outcome.status == RELEASE
        assert not pid_alive(int(started.read_text()))
    finally:
        kill_pids_from(started)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (JobSpec(name="k", command="true", shell="/no/such/shell"), "cannot start /no/such/shell"),
        (
            JobSpec(name="k", command="true", cwd="/no/such/dir"),
            "its directory /no/such/dir (cwd) does not exist",
        ),
    ],
)
def test_start_errors_are_failures_with_a_reason(spec: JobSpec, message: str) -> None:
    _, outcome = _run(spec)
    assert outcome.status == FAILED and outcome.error is not None and message in outcome.error
