"""A migrated line whose user has no home directory runs as its cron ran it (issue #32, item 6).

cron chdirs to the job's HOME; when that directory is missing, Debian's cron runs the command in
its own directory (/var/spool/cron), busybox crond falls back to the same directory, and cronie
does not run it (docs/cron-flavours.md, rule 12). ``generate registry --cron F`` says which on
stderr and writes it (``cwd_fallback``); the installed worker does it, on every backend.

The user is a throwaway one made with ``useradd -M`` (no home), which needs root (CI runs as
root; elsewhere skipped, in CI a failure). The worker runs in a private mount namespace whose
/var/spool is a temporary directory holding ``cron/``: the host as cron left it, whatever this
machine has in /var/spool (nothing is mounted outside the worker's own process).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.registry import load_registry
from migrate_cron.store import JobState, Store
from tests.conftest import IN_CI, cli_path, run_cli
from tests.worker.helpers import queue_env

CRON_DIR = "/var/spool/cron"
SAYS = {
    "debian": f"Debian's cron then runs the command in {CRON_DIR}, and so does the worker",
    "busybox": f"busybox crond then runs the command in {CRON_DIR}, and so does the worker",
    "cronie": "cronie then does not run the command",
}


def _need_root(what: str) -> None:
    if IN_CI:
        pytest.fail(f"CI must run as root to test {what}")
    pytest.skip(f"needs root to test {what}")


@pytest.fixture
def homeless(shared_tmp: Path) -> Iterator[tuple[str, Path]]:
    """A throwaway user whose passwd home does not exist, and that home."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        _need_root("a user without a home")
    name = f"mch{uuid.uuid4().hex[:8]}"
    home = shared_tmp / "home" / name
    subprocess.run(
        ["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh", name],
        check=True,
        timeout=30,
    )
    try:
        yield name, home
    finally:
        subprocess.run(["userdel", name], check=False, timeout=30, capture_output=True)


def _generate(
    tmp: Path, user: str, cron: str
) -> tuple[Path, str, subprocess.CompletedProcess[str]]:
    crontab = tmp / "app.cron"
    crontab.write_text(f'*/5 * * * * {user} pwd; echo "HOME=$HOME"\n')
    registry = tmp / f"migrate-cron-{cron}.toml"
    proc = run_cli("generate", "registry", "--cron", cron, "--format", "system", "--tz", "UTC",
                   "--json", str(crontab), "-o", str(registry), cwd=tmp)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    registry.chmod(0o644)
    [spec] = list(load_registry(registry))
    return registry, spec.name, proc


def _worker(tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``migrate-cron worker --once`` in a mount namespace whose /var/spool holds ``cron/``."""
    if not shutil.which("unshare"):
        _need_root("a private /var/spool (unshare)")
    spool = tmp / "spool"
    (spool / "cron").mkdir(parents=True, exist_ok=True)
    script = 'mount --bind "$1" /var/spool && shift && exec "$@"'
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         str(spool), cli_path(), "worker", "--once"],
        capture_output=True, text=True, env={**os.environ, **env}, cwd=tmp, timeout=120,
        check=False,
    )  # fmt: skip
    if proc.returncode != 0 and "mount" in proc.stderr and not IN_CI:
        pytest.skip(f"cannot mount in a private namespace here: {proc.stderr.strip()}")
    return proc


def _enqueue(name: str, env: dict[str, str], tmp: Path) -> int:
    proc = run_cli("enqueue", name, "--json", env=env, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return int(json.loads(proc.stdout)["job_id"])


@pytest.mark.parametrize("cron", ["debian", "busybox", "cronie"])
def test_a_line_whose_user_has_no_home_runs_as_its_cron_ran_it(
    store: Store,
    db_url: str,
    table_prefix: str,
    shared_tmp: Path,
    homeless: tuple[str, Path],
    cron: str,
) -> None:
    user, home = homeless
    registry, name, gen = _generate(shared_tmp, user, cron)
    # generate says what this cron does, on stderr and in --json, naming the line.
    assert f"app.cron:1: {user}'s home {home}, which does not exist on this host" in gen.stderr
    assert SAYS[cron] in gen.stderr
    assert any(SAYS[cron] in n for n in json.loads(gen.stdout)["notices"])
    [spec] = list(load_registry(registry))
    assert spec.cwd == str(home)
    assert spec.cwd_fallback == (None if cron == "cronie" else CRON_DIR)

    env = queue_env(db_url, table_prefix, registry)
    job_id = _enqueue(name, env, shared_tmp)
    run = _worker(shared_tmp, env)
    assert run.returncode == 0, run.stderr
    job = store.get(job_id)
    assert job is not None
    assert "cannot start" not in (job.last_error or "")
    if cron == "cronie":
        # Not run, not retried: failed at its first attempt, and the error says why and how on.
        assert (job.state, job.attempts) == (JobState.FAILED, 1), job
        assert f"its directory {home} (cwd) does not exist on this host" in (job.last_error or "")
        assert f"migrate-cron jobs retry {job_id}" in (job.last_error or "")
        assert not job.output
    else:
        assert job.state == JobState.DONE, job.last_error
        # Run in cron's directory, with HOME as cron leaves it (the missing home).
        assert (job.output or "").split() == [CRON_DIR, f"HOME={home}"]
        assert f"{home} (cwd) does not exist: ran in {CRON_DIR} (cwd_fallback)" in run.stderr


def test_a_home_made_after_generate_is_where_the_retried_job_runs(
    store: Store, db_url: str, table_prefix: str, shared_tmp: Path, homeless: tuple[str, Path]
) -> None:
    """cronie: failed while the home was missing; once it exists, `jobs retry` runs it there
    (the check is made at each run, not frozen at generate time)."""
    user, home = homeless
    registry, name, _ = _generate(shared_tmp, user, "cronie")
    env = queue_env(db_url, table_prefix, registry)
    job_id = _enqueue(name, env, shared_tmp)
    assert _worker(shared_tmp, env).returncode == 0
    failed = store.get(job_id)
    assert failed is not None and failed.state == JobState.FAILED
    home.mkdir(parents=True)
    shutil.chown(home, user, user)
    retry = run_cli("jobs", "retry", str(job_id), "--yes", env=env, cwd=shared_tmp)
    assert retry.returncode == 0, retry.stderr
    assert _worker(shared_tmp, env).returncode == 0
    job = store.get(job_id)
    assert job is not None and job.state == JobState.DONE, job.last_error
    assert (job.output or "").split() == [str(home), f"HOME={home}"]
