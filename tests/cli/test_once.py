"""``migrate-cron once KEY -- COMMAND`` from the installed command, on SQLite, PostgreSQL and
MariaDB: one run per key however many callers race, a crash left in doubt (exit 3) until
``--forget``, ttl, and the command's own exit code and signals passed through."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.store import Store
from tests.conftest import cli_path, run_cli
from tests.faults.procs import wait_for


@pytest.fixture
def env(db_url: str, table_prefix: str, store: Store) -> dict[str, str]:
    return {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts in their own session; their groups are killed on the way out."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def effect_cmd(out: Path, release: Path | None = None) -> list[str]:
    """Appends one line per run; with ``release``, then waits for that file to appear."""
    script = f'echo "run $$" >> "{out}"'
    if release is not None:
        script += f'; while [ ! -e "{release}" ]; do sleep 0.05; done'
    return ["sh", "-c", script]


def start(
    env: dict[str, str], procs: list[subprocess.Popen[str]], *args: str
) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [cli_path(), "once", *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    procs.append(proc)
    return proc


def finished(procs: list[subprocess.Popen[str]], count: int) -> list[subprocess.Popen[str]] | None:
    """The processes that exited, once exactly ``count`` have."""
    done = [p for p in procs if p.poll() is not None]
    return done if len(done) == count else None


def test_concurrent_calls_with_one_key_run_the_command_once(
    env: dict[str, str], tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    out, release = tmp_path / "runs", tmp_path / "release"
    procs = [start(env, spawned, "k:1", "--", *effect_cmd(out, release)) for _ in range(4)]
    # The losers refuse while the winner still runs (it waits for `release`).
    losers = wait_for(
        lambda: finished(procs, 3), timeout=60, what="three of four callers to be refused"
    )
    assert [p.returncode for p in losers] == [3, 3, 3]
    for loser in losers:
        assert "still running" in " ".join(loser.communicate()[1].split())
    release.touch()
    (winner,) = [p for p in procs if p not in losers]
    assert winner.wait(timeout=60) == 0
    assert len(lines(out)) == 1
    again = run_cli("once", "k:1", "--", *effect_cmd(out), env=env)
    assert again.returncode == 0 and "done already" in again.stderr
    assert len(lines(out)) == 1


def test_sigkill_mid_command_leaves_attempted_until_forget(
    env: dict[str, str], store: Store, tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    out, release = tmp_path / "runs", tmp_path / "release"
    proc = start(env, spawned, "invoice:8812:send", "--", *effect_cmd(out, release))
    wait_for(lambda: lines(out), timeout=60, what="the command to start")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    effect = store.effect_get("invoice:8812:send")
    assert effect is not None and effect.status == "attempted"

    refused = run_cli("once", "invoice:8812:send", "--", *effect_cmd(out), env=env)
    message = " ".join(refused.stderr.split())
    assert refused.returncode == 3, refused.stderr
    assert "may have happened" in message and "--forget invoice:8812:send" in message
    assert "Traceback" not in refused.stderr
    assert len(lines(out)) == 1

    forget = run_cli("once", "--forget", "invoice:8812:send", env=env)
    assert forget.returncode == 0 and "was attempted" in forget.stderr
    rerun = run_cli("once", "invoice:8812:send", "--", *effect_cmd(out), env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert len(lines(out)) == 2
    effect = store.effect_get("invoice:8812:send")
    assert effect is not None and (effect.status, effect.exit_code) == ("done", 0)


def test_retry_attempted_takes_a_key_in_doubt(
    env: dict[str, str], store: Store, tmp_path: Path
) -> None:
    store.effect_begin("k", holder="elsewhere:1")
    out = tmp_path / "runs"
    refused = run_cli("once", "k", "--json", "--", *effect_cmd(out), env=env)
    assert refused.returncode == 3
    assert json.loads(refused.stdout)["in_doubt"] is True
    assert "still running, or it crashed" in " ".join(refused.stderr.split())
    taken = run_cli("once", "k", "--retry-attempted", "--", *effect_cmd(out), env=env)
    assert taken.returncode == 0, taken.stderr
    assert len(lines(out)) == 1


def test_exit_code_passes_through_and_a_failed_key_runs_again(
    env: dict[str, str], store: Store, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    failing = ["sh", "-c", f'echo fail >> "{out}"; echo to-stdout; exit 4']
    first = run_cli("once", "k", "--", *failing, env=env)
    assert (first.returncode, first.stdout) == (4, "to-stdout\n")
    effect = store.effect_get("k")
    assert effect is not None and (effect.status, effect.exit_code) == ("failed", 4)
    second = run_cli("once", "k", "--json", "--", *effect_cmd(out), env=env)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["ran"] is True
    assert lines(out) == ["fail", lines(out)[1]]
    done = run_cli("once", "k", "--json", "--", *effect_cmd(out), env=env)
    data = json.loads(done.stdout)
    assert (data["ran"], data["effect"]["status"], data["effect"]["attempts"]) == (False, "done", 2)
    quiet = run_cli("once", "k", "-q", "--", *effect_cmd(out), env=env)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    missing = run_cli("once", "nf", "--", str(tmp_path / "no-such-program"), env=env)
    assert missing.returncode == 127 and "cannot run" in missing.stderr
    assert store.effect_get("nf") is not None


def test_ttl_lets_a_done_key_run_again_after_it_passes(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "runs"
    assert run_cli("once", "daily", "--ttl", "1s", "--", *effect_cmd(out), env=env).returncode == 0
    skipped = run_cli("once", "daily", "--ttl", "1s", "--", *effect_cmd(out), env=env)
    assert "done already" in skipped.stderr or len(lines(out)) == 2  # a slow machine: expired
    wait_for(
        lambda: (
            run_cli("once", "daily", "--ttl", "1s", "-q", "--", *effect_cmd(out), env=env)
            and len(lines(out)) >= 2
        ),
        timeout=30,
        what="the ttl to pass",
        interval=0.2,
    )


def test_sigterm_is_passed_to_the_command_and_recorded_as_failed(
    env: dict[str, str], store: Store, tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    out, release = tmp_path / "runs", tmp_path / "release"
    proc = start(env, spawned, "k", "--", *effect_cmd(out, release))
    wait_for(lambda: lines(out), timeout=60, what="the command to start")
    proc.send_signal(signal.SIGTERM)  # the `once` process only, as a service manager might
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    effect = store.effect_get("k")
    assert effect is not None and (effect.status, effect.exit_code) == ("failed", 143)


def test_the_job_id_of_a_worker_run_is_kept(env: dict[str, str], store: Store) -> None:
    result = run_cli("once", "k", "--", "true", env={**env, "MIGRATE_CRON_JOB_ID": "42"})
    assert result.returncode == 0, result.stderr
    effect = store.effect_get("k")
    assert effect is not None and effect.job_id == 42


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("k",), "no command"),
        (("--forget", "k", "--", "true"), "takes no command"),
        (("k", "--ttl", "soon", "--", "true"), "--ttl"),
        (("", "--", "true"), "1 to 255"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = run_cli("once", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split())
    assert list(tmp_path.iterdir()) == []


def test_help_shows_examples() -> None:
    result = run_cli("once", "--help")
    assert result.returncode == 0
    for text in ("--ttl", "--forget", "--retry-attempted", "Examples", "invoice:8812:send"):
        assert text in result.stdout
