"""The small things a new user meets in the first hour (issue 32, item 7), from the installed
command: reading creates no database file; ``web`` on a busy port is one line and exit 1;
``scheduler --once`` always says what it did and when the next slot is; ``status`` and
``jobs list`` piped print the same layout; messages show the URL as the user typed it; and
the examples of ``--help`` run as written."""

from __future__ import annotations

import shlex
import shutil
import socket
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from migrate_cron.cli.help_text import EXAMPLES
from migrate_cron.store import Store
from tests.conftest import run_cli
from tests.e2e.journey import SHOP
from tests.fresh_database import fresh_database
from tests.user_env import user_env

SCHEDULED = """
[jobs.hourly-report-with-a-long-name]
schedule = "0 * * * *"
timezone = "UTC"
command = "true"
mode = "scheduler"
"""


def queue_env(db_url: str, table_prefix: str, tmp_path: Path) -> dict[str, str]:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(SCHEDULED)
    return user_env(
        MIGRATE_CRON_DATABASE_URL=db_url,
        MIGRATE_CRON_TABLE_PREFIX=table_prefix,
        MIGRATE_CRON_REGISTRY=str(registry),
        MIGRATE_CRON_SPOOL=str(tmp_path / "spool"),
    )


def test_reading_in_an_empty_directory_creates_no_database(tmp_path: Path) -> None:
    env = user_env(MIGRATE_CRON_SPOOL=str(tmp_path / "spool"))  # the default URL
    for command in (("status",), ("status", "--check"), ("jobs", "list"), ("jobs", "show", "1")):
        result = run_cli(*command, cwd=tmp_path, env=env)
        [line] = result.stderr.strip().splitlines()
        assert result.returncode == 1, (command, result.stderr)
        assert line.startswith("error: no database yet: migrate-cron.db does not exist"), line
        assert "`migrate-cron db upgrade`" in line
    for command in (("db", "current"), ("db", "downgrade", "base")):
        result = run_cli(*command, cwd=tmp_path, env=env)
        assert result.returncode == 0, (command, result.stderr)
        assert "no database yet" in result.stderr or "nothing to downgrade" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == []  # no migrate-cron.db, nothing else


def test_web_on_a_busy_port_is_one_line_and_exit_1(
    db_url: str, table_prefix: str, tmp_path: Path, store: Store
) -> None:
    env = queue_env(db_url, table_prefix, tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = run_cli("web", "--port", str(port), cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()  # no URL printed first, no uvicorn log line
    assert line == (
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "choose another with --port"
    )


def test_scheduler_once_says_how_many_slots_were_due_and_when_the_next_is(
    db_url: str, table_prefix: str, tmp_path: Path, store: Store
) -> None:
    env = queue_env(db_url, table_prefix, tmp_path)
    now = ("scheduler", "--once", "--now", "2026-03-01T10:00:30Z")
    first = run_cli(*now, cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "hourly-report-with-a-long-name" in first.stdout
    assert first.stderr.strip().splitlines()[-1] == (
        "1 slot due (1 enqueued); next at 2026-03-01 11:00 UTC"
    )
    again = run_cli(*now, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""
    assert again.stderr.strip() == "0 slots due; next at 2026-03-01 11:00 UTC"
    quiet = run_cli(*now, "--quiet", cwd=tmp_path, env=env)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")


def test_status_and_jobs_list_piped_print_the_same_layout(
    db_url: str, table_prefix: str, tmp_path: Path, store: Store
) -> None:
    """Piped (not a terminal), both print their table at the same fixed width; with a width
    the user chose (COLUMNS) too narrow for it, both print stacked records."""
    env = queue_env(db_url, table_prefix, tmp_path)
    store.enqueue("hourly-report-with-a-long-name")
    status = run_cli("status", cwd=tmp_path, env=env)
    jobs = run_cli("jobs", "list", cwd=tmp_path, env=env)
    for result in (status, jobs):
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert any(line.startswith("┏") for line in lines), result.stdout  # a table
        assert all(line == line.rstrip() for line in lines)  # not padded to the width
    narrow = {**env, "COLUMNS": "50"}
    status = run_cli("status", cwd=tmp_path, env=narrow)
    jobs = run_cli("jobs", "list", cwd=tmp_path, env=narrow)
    assert "kind hourly-report-with-a-long-name" in status.stdout
    assert jobs.stdout.splitlines()[0].startswith("id ")
    for result in (status, jobs):
        assert not any(line.startswith("┏") for line in result.stdout.splitlines())


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_messages_show_the_url_as_typed(
    db_url: str, table_prefix: str, tmp_path: Path, backend: str
) -> None:
    """``postgresql://`` stays ``postgresql://`` (not the ``+psycopg`` driver we pick), the
    password masked, in what ``db`` and an unreachable database's error say."""
    typed = make_url(db_url).set(drivername=backend)
    if backend == "postgresql":  # trust: any password works (MariaDB's root has none)
        typed = typed.set(password="S3cret")
    url = typed.render_as_string(hide_password=False)
    shown = typed.render_as_string(hide_password=True)
    env = user_env(MIGRATE_CRON_SPOOL=str(tmp_path / "spool"), COLUMNS="250")
    args = ("--database-url", url, "--table-prefix", table_prefix)
    try:
        up = run_cli("db", "upgrade", *args, cwd=tmp_path, env=env)
        assert up.returncode == 0, up.stderr
        assert up.stderr.startswith(f"{shown}: upgraded base -> "), up.stderr
        status = run_cli("status", "--check", *args, cwd=tmp_path, env=env)
        assert status.returncode == 0, status.stderr
    finally:
        down = run_cli("db", "downgrade", "base", *args, cwd=tmp_path, env=env)
        assert down.returncode == 0, down.stderr
    assert down.stderr.startswith(f"{shown}: downgraded "), down.stderr
    away = make_url(url).set(port=1).render_as_string(hide_password=False)
    failed = run_cli("status", "--database-url", away, cwd=tmp_path, env=env)
    assert failed.returncode == 1
    assert f"{backend}://" in failed.stderr and "+p" not in failed.stderr, failed.stderr
    assert "S3cret" not in up.stderr + down.stderr + failed.stderr


def demo_directory(root: Path, url: str) -> Path:
    """The directory the examples are written for: the shop's crontab, its registry and the
    tables (`make demo` after `generate registry` and `db upgrade`)."""
    root.mkdir()
    shutil.copyfile(SHOP, root / "shop.crontab")
    env = user_env(MIGRATE_CRON_SPOOL=str(root / "spool"), MIGRATE_CRON_DATABASE_URL=url)
    for command in ("generate registry shop.crontab --tz UTC", "db upgrade"):
        result = run_cli(*shlex.split(command), cwd=root, env=env)
        assert result.returncode == 0, (command, result.stderr)
    return root


#: Examples that need nothing the demo directory lacks, as (command, example index); each
#: runs in its own copy, after the examples listed before it in its tuple.
RUNNABLE = (
    (("migrate", 0),),
    (("migrate", 1), ("scheduler", 1), ("rollback", 0)),
    (("migrate", 2),),
    (("plan", 0), ("db current", 0), ("status", 0), ("jobs list", 0), ("migrations", 0)),
    (("verify", 0), ("simulate", 0), ("cleanup", 0), ("db upgrade", 0)),
)


def test_help_examples_run_as_written(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """An example that fails when pasted is worse than none: every ``migrate --help``
    example, and the first of the commands around it, in the demo's directory — on SQLite's
    default ``migrate-cron.db``, or a new database in MIGRATE_CRON_DATABASE_URL."""
    if backend == "sqlite":
        examples_run_as_written(tmp_path, "")
        return
    request.getfixturevalue("pg_database" if backend == "postgresql" else "mariadb_database")
    with fresh_database(backend) as url:
        examples_run_as_written(tmp_path, url)


def examples_run_as_written(tmp_path: Path, url: str) -> None:
    demo = demo_directory(tmp_path / "demo", url)
    for n, sequence in enumerate(RUNNABLE):
        copy = tmp_path / f"copy{n}"
        shutil.copytree(demo, copy)
        env = user_env(MIGRATE_CRON_SPOOL=str(copy / "spool"), MIGRATE_CRON_DATABASE_URL=url)
        for path, index in sequence:
            example = EXAMPLES[path][index]
            result = run_cli(*shlex.split(example)[1:], cwd=copy, env=env)
            assert result.returncode == 0, f"{example}: {result.stderr}"
            assert "Traceback" not in result.stderr
    assert {p for seq in RUNNABLE for p, _ in seq} >= {"migrate"}
    assert {i for seq in RUNNABLE for p, i in seq if p == "migrate"} == set(
        range(len(EXAMPLES["migrate"]))
    )
