"""What a person does with the installed command is in the action log: ``jobs retry``,
``jobs cancel``, ``jobs run``, ``pause`` and ``resume``, as the OS user from ``cli@HOST``."""

from __future__ import annotations

import getpass
import os
import socket
from pathlib import Path

from migrate_cron.store import Store
from migrate_cron.vocabulary import Action
from tests.cli.test_jobs import failed_jobs
from tests.conftest import run_cli


def test_acting_commands_are_recorded(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    (tmp_path / "migrate-cron.toml").write_text(
        '[jobs.flaky]\ncommand = "true"\nmax_attempts = 3\n'
    )
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    env_no_sudo = {k: v for k, v in os.environ.items() if k != "SUDO_USER"} | env
    one, two, three = failed_jobs(store, "flaky", 3)

    def ok(*args: str) -> None:
        result = run_cli(*args, env=env_no_sudo, cwd=tmp_path, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr

    ok("jobs", "retry", str(one), "--yes")
    ok("jobs", "cancel", str(two), "--yes")
    ok("jobs", "retry", "--kind", "flaky", "--yes")
    ok("pause", "flaky")
    ok("resume", "flaky")
    ok("jobs", "run", "flaky")
    rows = store.actions_for_kind("flaky")
    assert [(r.action, r.changed) for r in rows] == [
        (Action.RUN_NOW, 1), (Action.RESUME, 1), (Action.PAUSE, 1), (Action.RETRY_FAILED, 1),
        (Action.CANCEL, 1), (Action.RETRY, 1),
    ]  # fmt: skip
    assert {(r.who, r.origin) for r in rows} == {(getpass.getuser(), f"cli@{socket.gethostname()}")}
    assert [r.action for r in store.actions_for_job(three)] == []
    assert [r.action for r in store.actions_for_job(one)] == [Action.RETRY]
    new = store.list_jobs(kind="flaky", limit=1)[0]
    assert rows[0].job_id == new.id and new.max_attempts == 3
