"""Two ways to the tables, each followed from the installed command in a fresh directory on a
fresh database, as a new user would: every step the tool advises ("next:", and what ``db
current`` / ``db upgrade`` / ``db downgrade`` say to run) is run as written and succeeds
(issue 32, item 1). SQLite uses the default URL (``migrate-cron.db`` in the directory, no
setting at all); PostgreSQL and MariaDB a URL without a driver in MIGRATE_CRON_DATABASE_URL.

- your own Alembic project: ``generate migration --init alembic``, then ``alembic upgrade
  head``; ``migrate-cron db`` recognises the tables and leaves them to that project;
- the packaged revision: ``db upgrade``; a later ``generate migration --init`` does not
  advise an upgrade that would fail on "table already exists".
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.generate.revision import SCHEMA_VERSION, revision_id
from tests.conftest import BACKENDS, run_cli
from tests.fresh_database import fresh_database
from tests.user_env import user_env

HEAD = revision_id("", SCHEMA_VERSION)
BEFORE_HEAD = revision_id("", SCHEMA_VERSION - 1)
ALEMBIC = str(Path(sys.executable).with_name("alembic"))


@pytest.fixture(params=BACKENDS)
def user(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh directory and the environment a user has there: nothing set for SQLite, the
    URL of a new database for a server."""
    env = user_env(COLUMNS="250", MIGRATE_CRON_SPOOL=str(tmp_path / "spool"))
    home = tmp_path / "project"
    home.mkdir()
    if request.param == "sqlite":
        yield home, env
        return
    request.getfixturevalue("pg_database" if request.param == "postgresql" else "mariadb_database")
    with fresh_database(request.param) as url:
        yield home, {**env, "MIGRATE_CRON_DATABASE_URL": url}


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A command as the tool printed it: ``migrate-cron …`` (installed) or ``alembic …``."""
    words = shlex.split(command)
    if words[0] == "migrate-cron":
        return run_cli(*words[1:], cwd=cwd, env=env, timeout=120)
    assert words[0] == "alembic", command
    return subprocess.run(
        [ALEMBIC, *words[1:]],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = run(command, cwd, env)
    assert result.returncode == 0, f"{command}: {result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result


def one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    """The single stderr line of a command that exits ``code``."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code and len(lines) == 1, (result.returncode, result.stderr)
    return lines[0]


def next_line(result: subprocess.CompletedProcess[str]) -> str:
    [line] = [x for x in result.stderr.splitlines() if x.startswith("next:")]
    return line


def quoted(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def test_your_own_alembic_project(user: tuple[Path, dict[str, str]]) -> None:
    home, env = user
    init = ok("migrate-cron generate migration --init alembic", home, env)
    hint = next_line(init)
    assert quoted(hint)[0] == "alembic upgrade head", hint
    # Asked in between, `db current` advises the project's way too, never `db upgrade` (whose
    # tables would make the project's upgrade fail on "table already exists").
    before = ok("migrate-cron db current", home, env)
    assert quoted(before.stderr) == ["alembic upgrade head"], before.stderr
    upgrade = ok(quoted(hint)[0], home, env)  # the hint, as written
    assert "%(levelname)" not in upgrade.stderr  # the ini's log format is read raw
    assert re.search(
        r"^INFO  \[alembic\.runtime\.migration\] Running upgrade", upgrade.stderr, re.M
    )

    current = ok("migrate-cron db current", home, env)
    assert current.stdout == f"{HEAD} (head)\n"
    said = " ".join(current.stderr.split())
    assert "managed by your own Alembic project (version table alembic_version)" in said
    assert "no tables yet" not in said
    state = json.loads(ok("migrate-cron db current --json --check", home, env).stdout)
    assert (state["managed_by"], state["tables_at"], state["up_to_date"]) == (
        "alembic",
        [HEAD],
        True,
    )
    ok("migrate-cron status", home, env)
    assert "nothing to upgrade" in ok("migrate-cron db upgrade", home, env).stderr

    refused = one_line(run("migrate-cron db downgrade", home, env), 1)
    assert "alembic downgrade REV" in refused, refused
    ok("alembic downgrade -1", home, env)  # REV: one step back
    behind = ok("migrate-cron db current", home, env)
    assert behind.stdout == f"{BEFORE_HEAD}\n"
    refused = one_line(run("migrate-cron db upgrade", home, env), 1)
    steps = quoted(refused.split("not by `migrate-cron db`:", 1)[1])
    assert steps == ["alembic upgrade head", "migrate-cron generate migration"], refused
    assert quoted(behind.stderr)[-2:] == steps
    ok(steps[0], home, env)  # the history has the step: `alembic upgrade head` is all

    # A migrate-cron release adds a step the project's history lacks (here: the newest step
    # taken out of it): the advised order, generate then upgrade, brings it to the head.
    ok("alembic downgrade -1", home, env)
    [newest] = (home / "alembic" / "versions").glob(f"{HEAD}_*.py")
    newest.unlink()
    refused = one_line(run("migrate-cron db upgrade", home, env), 1)
    assert f"if its history lacks {HEAD}" in refused
    generated = ok(steps[1], home, env)
    assert quoted(next_line(generated)) == ["alembic upgrade head"]
    ok("alembic upgrade head", home, env)
    assert ok("migrate-cron db current --check", home, env).stdout == f"{HEAD} (head)\n"


def test_the_packaged_revision(user: tuple[Path, dict[str, str]]) -> None:
    home, env = user
    ok("migrate-cron db upgrade", home, env)
    ok("migrate-cron db current --check", home, env)
    ok("migrate-cron status", home, env)

    # Adding an Alembic project afterwards: the tool does not advise `alembic upgrade head`,
    # which would fail on the tables `db upgrade` made ...
    init = ok("migrate-cron generate migration --init alembic", home, env)
    hint = next_line(init)
    assert hint.startswith("next: not `alembic upgrade head`: "), hint
    assert run("alembic upgrade head", home, env).returncode != 0
    # ... the first way it offers keeps the tables as they are (the project is unused) ...
    ok("migrate-cron db current --check", home, env)
    # ... the second hands them to the project: drop them, then upgrade there.
    alternative = hint.split("or drop them with", 1)[1]
    drop, upgrade = quoted(alternative)
    assert (drop, upgrade) == ("migrate-cron db downgrade base", "alembic upgrade head")
    ok(drop, home, env)
    ok(upgrade, home, env)
    state = json.loads(ok("migrate-cron db current --json", home, env).stdout)
    assert (state["managed_by"], state["up_to_date"]) == ("alembic", True)
    ok("migrate-cron status", home, env)
