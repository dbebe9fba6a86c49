"""A migrated line runs as the user cron ran it as (docs/operating.md, "Who a job runs as").

Needs root to create a throwaway user (CI runs as root; elsewhere the test is skipped, and in
CI it fails instead). The user's worker runs the same package with the system Python (this
test's interpreter may live under a home other users cannot enter).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.registry import load_registry
from migrate_cron.store import JobState, Store
from tests.conftest import IN_CI, run_cli
from tests.worker.helpers import queue_env

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def throwaway_user(shared_tmp: Path) -> Iterator[str]:
    if os.geteuid() != 0 or not shutil.which("useradd"):
        if IN_CI:
            pytest.fail("CI must run as root to test running jobs as another user")
        pytest.skip("needs root (useradd) to create a throwaway user")
    name = f"mct{uuid.uuid4().hex[:8]}"
    home = shared_tmp / "home" / name
    home.parent.mkdir()
    subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", name],
        check=True,
        timeout=30,
    )
    try:
        yield name
    finally:
        subprocess.run(["userdel", "--remove", name], check=False, timeout=30,
                       capture_output=True)  # fmt: skip


def _project(tmp_path: Path, user: str) -> tuple[Path, str, Path]:
    """A cron.d file with one line for ``user``, a registry generated from it, the job's name,
    and the world-writable directory its command writes to."""
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    crond = tmp_path / "cron.d"
    crond.mkdir()
    (crond / "app").write_text(
        f'*/5 * * * * {user} echo "$(id -un) $HOME $LOGNAME $(pwd)" >> {out}/who\n'
    )
    registry = tmp_path / "migrate-cron.toml"
    proc = run_cli("generate", "registry", str(crond / "app"), "-o", str(registry),
                   "--tz", "UTC", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [spec] = list(load_registry(registry))
    assert spec.user == user
    registry.chmod(0o644)
    return registry, spec.name, out


def test_a_root_worker_runs_the_line_as_its_user(
    store: Store, db_url: str, table_prefix: str, shared_tmp: Path, throwaway_user: str
) -> None:
    tmp_path = shared_tmp
    registry, name, out = _project(tmp_path, throwaway_user)
    home = pwd.getpwnam(throwaway_user).pw_dir
    env = queue_env(db_url, table_prefix, registry)
    assert run_cli("enqueue", name, env=env, cwd=tmp_path).returncode == 0
    done = run_cli("worker", "--once", env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    who = (out / "who").read_text().split()
    assert who == [throwaway_user, home, throwaway_user, home]


def test_a_worker_that_cannot_become_the_user_leaves_the_job_to_others(
    pg_database: str, table_prefix: str, shared_tmp: Path, throwaway_user: str
) -> None:
    tmp_path = shared_tmp
    from migrate_cron.store import open_store

    store = open_store(pg_database, prefix=table_prefix)
    store.create_schema()
    try:
        registry, name, out = _project(tmp_path, throwaway_user)
        env = queue_env(pg_database, table_prefix, registry)
        job_id = store.enqueue(name, run_at=store.db_now()).job_id
        # Another non-root user's worker: not claimed, said once, status --check fires.
        other = _as_user("nobody", ["worker", "--once"], env, tmp_path)
        assert other.returncode == 0, other.stderr
        assert "not-claimed" in other.stderr and "not root" in other.stderr
        job = store.get(job_id)
        assert job is not None and (job.state, job.attempts) == (JobState.OPEN, 0)
        check = run_cli("status", "--check", "--max-age", "0s", env=env, cwd=tmp_path)
        assert check.returncode == 1 and name in check.stdout + check.stderr
        # The user's own worker runs it.
        own = _as_user(throwaway_user, ["worker", "--once"], env, tmp_path)
        assert own.returncode == 0, own.stderr
        job = store.get(job_id)
        assert job is not None and job.state == JobState.DONE, job
        assert (out / "who").read_text().split()[0] == throwaway_user
    finally:
        store.drop_schema()
        store.dispose()


def _as_user(
    user: str, args: list[str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``migrate-cron ARGS`` as ``user``, with the system Python and this checkout."""
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    site = sysconfig.get_paths()["purelib"]
    code = (
        "import sys; from migrate_cron.cli.main import main; sys.argv[0] = 'migrate-cron'; main()"
    )
    full = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{REPO}:{site}",
        "HOME": "/",
        **env,
    }
    return subprocess.run(
        ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in full.items()),
         python, "-c", code, *args],
        capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
    )  # fmt: skip
