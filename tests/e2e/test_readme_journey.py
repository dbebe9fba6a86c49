"""The README's journey, read from the README and run as written from the installed command in
a fresh directory on a fresh database, by both ways to the tables: the journey's ``db upgrade``
(our packaged revision), and the README's row for an Alembic project of your own
(``generate migration --init alembic``, then ``alembic upgrade head``) in its place. Every
command the tool advises on the way (a ``migrate-cron …`` or ``alembic …`` in backquotes on
stderr: "next:", "start with", "then …") is followed: by a later step of the journey that
runs it (the same words), else at once, and it must succeed (issue 32).

Documented substitutions only: the crontab file is samples/shop.crontab (the README's
``crontab -l > crontab``); ``worker`` runs in the background (as in another terminal) with
``--heartbeat 1`` until the journey ends, so the steps after it see a worker running; the
database is SQLite's default (no setting at all) or a new PostgreSQL/MariaDB database in
``MIGRATE_CRON_DATABASE_URL`` as typed (README, "Pointing it at your database"). The hint
to install the edited copy with ``crontab crontab`` is not followed: it would replace this
machine's crontab."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.store import open_store
from migrate_cron.store.leases import REAPER_LEASE
from tests.conftest import BACKENDS, run_cli
from tests.faults.procs import Fleet, wait_for
from tests.fresh_database import fresh_database
from tests.user_env import user_env

ROOT = Path(__file__).parents[2]
ALEMBIC = str(Path(sys.executable).with_name("alembic"))
#: The commands a hint may name that the test runs; others (``crontab FILE``) are the user's.
OURS = ("migrate-cron", "alembic")


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def journey() -> list[list[str]]:
    """The ``migrate-cron`` lines of the first ``sh`` block under "The journey"."""
    block = readme().split("## The journey", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [words for words in lines if words[:1] == ["migrate-cron"]]


def own_alembic_project() -> list[list[str]]:
    """The commands of the README's "Two ways to the tables" row for a new Alembic project."""
    section = readme().split("### Two ways to the tables", 1)[1]
    [row] = [r for r in section.splitlines() if r.startswith("| you want an Alembic project")]
    return [shlex.split(c) for c in re.findall(r"`([^`]+)`", row.split("|")[2])]


def schema_path(steps: list[list[str]], path: str) -> list[list[str]]:
    if path == "db upgrade":
        return steps
    upgrade = ["migrate-cron", "db", "upgrade"]
    assert steps.count(upgrade) == 1, steps
    at = steps.index(upgrade)
    return [*steps[:at], *own_alembic_project(), *steps[at + 1 :]]


def hints(stderr: str) -> list[list[str]]:
    """The commands of ours a step advises, in backquotes (``migrate-cron migrate NAME`` …)."""
    found = [shlex.split(c) for c in re.findall(r"`([^`\n]+)`", stderr)]
    return [words for words in found if words and words[0] in OURS]


def same(a: list[str], b: list[str]) -> bool:
    """The same command: the same words, options in any order."""
    return a[:2] == b[:2] and sorted(a) == sorted(b)


@pytest.fixture(params=BACKENDS)
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh directory and what a user's shell has there: nothing set for SQLite, the URL of
    a new database for a server."""
    home = tmp_path / "project"
    home.mkdir()
    env = user_env(MIGRATE_CRON_SPOOL=str(tmp_path / "spool"), TZ="UTC")  # cron's zone: --tz UTC
    if request.param == "sqlite":
        yield home, env
        return
    request.getfixturevalue("pg_database" if request.param == "postgresql" else "mariadb_database")
    with fresh_database(request.param) as url:
        yield home, {**env, "MIGRATE_CRON_DATABASE_URL": url}


@pytest.mark.parametrize("tables", ["db upgrade", "own alembic project"])
def test_the_readme_journey_runs_as_written(
    tables: str, fresh: tuple[Path, dict[str, str]]
) -> None:
    home, env = fresh
    shutil.copy(ROOT / "samples" / "shop.crontab", home / "crontab")
    steps = schema_path(journey(), tables)
    assert [s[1] for s in steps][:3] == ["analyze", "plan", "generate"], steps
    assert any(s[1:3] == ["migrate", "invoices-export"] for s in steps)
    followed: list[list[str]] = []  # every hint, once: by the journey or at once
    if tables != "db upgrade":  # plan names `db upgrade` "or your own Alembic project": this one
        followed.append(["migrate-cron", "db", "upgrade"])
    with Fleet(home) as fleet:
        for n, words in enumerate(steps):
            if words == ["migrate-cron", "worker"]:
                _start_worker(fleet, env, home)
                continue
            _follow(hints(_run(words, env, home)), steps[n + 1 :], env, home, followed)
        for proc in fleet.procs:
            proc.signal(signal.SIGTERM)
            assert proc.wait(30) == 0, proc.output()[-2000:]
    assert (home / "crontab").read_bytes() == (ROOT / "samples" / "shop.crontab").read_bytes()
    advised = {" ".join(h) for h in followed}
    assert "alembic upgrade head" in advised or tables == "db upgrade", advised
    assert {"migrate-cron plan crontab", "migrate-cron verify invoices-export"} <= advised
    assert "migrate-cron db downgrade base" not in advised  # no way to the tables undid another


def _follow(
    advised: list[list[str]],
    later: list[list[str]],
    env: dict[str, str],
    cwd: Path,
    followed: list[list[str]],
) -> None:
    """Follow each advised command once, in order: the journey runs it later, or it is run
    now (and what it advises in turn)."""
    for hint in advised:
        if any(same(hint, f) for f in followed):
            continue
        followed.append(hint)
        if not any(same(hint, step) for step in later):
            _follow(hints(_run(hint, env, cwd)), later, env, cwd, followed)


def _run(words: list[str], env: dict[str, str], cwd: Path) -> str:
    """One command as written; it must exit 0 without a traceback. Returns its stderr."""
    if words[0] == "alembic":
        done = subprocess.run(
            [ALEMBIC, *words[1:]], cwd=cwd, env={**os.environ, **env},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert "%(levelname)" not in done.stderr, done.stderr
    else:
        done = run_cli(*words[1:], env=env, cwd=cwd, timeout=120)
    assert done.returncode == 0, (words, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    return done.stderr


def _start_worker(fleet: Fleet, env: dict[str, str], cwd: Path) -> None:
    worker = fleet.start(["worker", "--heartbeat", "1"], {**os.environ, **env}, cwd=cwd)
    url = env.get("MIGRATE_CRON_DATABASE_URL") or f"sqlite:///{cwd / 'migrate-cron.db'}"
    store = open_store(url)
    try:  # up once it renews the workers' reaper lease (what `verify` reads)
        wait_for(lambda: store.lease_holder(REAPER_LEASE), 60, f"the worker\n{worker.output()}")
    finally:
        store.dispose()
