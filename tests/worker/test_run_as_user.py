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


# ------------------------------------------ a line cron ran as nobody never runs as root
def test_a_line_cron_ran_as_nobody_never_runs_as_root(
    store: Store, db_url: str, table_prefix: str, shared_tmp: Path
) -> None:
    """Issue 30, item 6: the job-level ``user`` removed (or changed) while the line's
    ``[source].user = "nobody"`` stays. Before, ``migrate`` printed a note and exited 0,
    ``verify`` said ok and a root worker ran the line as root. Now the entry is refused
    everywhere, naming file, line, job and key, and nothing runs until it says nobody again —
    then a root worker really runs it as nobody."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI must run as root to test running jobs as another user")
        pytest.skip("needs root to run a job as nobody")
    tmp_path = shared_tmp
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    crond = tmp_path / "cron.d"
    crond.mkdir()
    line = f"*/5 * * * * nobody id -un >> {out}/who"
    crontab = crond / "app"
    crontab.write_text(f"HOME={tmp_path}\n{line}\n0 1 * * * root true\n")
    registry = tmp_path / "migrate-cron.toml"
    made = run_cli("generate", "registry", str(crontab), "-o", str(registry), "--tz", "UTC",
                   cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    written = registry.read_text()
    (name,) = [s.name for s in load_registry(registry) if s.user == "nobody"]
    env = {**queue_env(db_url, table_prefix, registry), "MIGRATE_CRON_SPOOL": str(tmp_path / "sp")}

    for edit in ("", 'user = "root"\n'):
        registry.write_text(written.replace('user = "nobody"\nenv', f"{edit}env", 1))
        migrate = run_cli("migrate", name, "--to", "enqueue", "--crontab", str(crontab),
                          env=env, cwd=tmp_path)  # fmt: skip
        assert migrate.returncode == 1, migrate.stderr
        assert f"job '{name}': key 'user'" in migrate.stderr and "'nobody'" in migrate.stderr
        assert crontab.read_text().splitlines()[1] == line  # nothing switched
        verify = run_cli("verify", name, env=env, cwd=tmp_path)
        assert verify.returncode == 1 and f"job '{name}': key 'user'" in verify.stderr
        enqueue = run_cli("enqueue", name, env=env, cwd=tmp_path)
        assert enqueue.returncode == 75 and "key 'user'" in enqueue.stderr, enqueue.stderr
        job_id = store.enqueue(name, run_at=store.db_now()).job_id
        worker = run_cli("worker", "--once", env=env, cwd=tmp_path, timeout=60)
        assert worker.returncode == 0, worker.stderr
        assert "registry-error" in worker.stdout + worker.stderr
        job = store.get(job_id)
        assert job is not None and (job.state, job.attempts) == ("open", 0)
        assert not (out / "who").exists()

    registry.write_text(written)  # as generated: the line's user again
    replay = run_cli("enqueue", name, env=env, cwd=tmp_path)  # and the spooled cron runs
    assert replay.returncode == 0, replay.stderr
    worker = run_cli("worker", "--once", env=env, cwd=tmp_path, timeout=60)
    assert worker.returncode == 0, worker.stderr
    jobs = store.list_jobs(kind=name)
    assert len(jobs) >= 3 and {j.state for j in jobs} == {"done"}  # 2 by hand + cron's
    assert (out / "who").read_text().split() == ["nobody"] * len(jobs)


def test_a_job_spec_built_by_hand_is_held_to_its_lines_user_too() -> None:
    """The worker's own guard, for a JobSpec that did not come through the loader."""
    from datetime import UTC, datetime

    from migrate_cron.registry import JobSpec, Registry, Source
    from migrate_cron.store.models import Job
    from migrate_cron.worker.cancel import Cancel
    from migrate_cron.worker.catalog import Catalog
    from migrate_cron.worker.runner import run_command

    spec = JobSpec(
        name="r",
        command="id -un",
        sources=(Source("/etc/cron.d/r", 1, "* * * * * nobody id -un", user="nobody"),),
    )
    catalog = Catalog.build(Registry("r.toml", {"r": spec}))
    assert "r" not in catalog.tasks and "'nobody'" in catalog.unrunnable["r"]
    now = datetime.now(UTC)
    job = Job(id=1, kind="r", ref=None, payload=None, state="running", attempts=1,
              max_attempts=1, run_at=now, scheduled_for=None, locked_by="w",
              locked_until=now, last_error=None, output=None, created_at=now,
              started_at=now, finished_at=None)  # fmt: skip
    result = run_command(spec, job, Cancel())
    assert result.returncode is None and "key 'user'" in (result.start_error or "")
