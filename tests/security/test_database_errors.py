"""Every command that touches the database, when the database is unreachable, refuses the
credentials, or has no tables yet (``db upgrade`` not run): one clear line, a non-zero exit,
no traceback. And whatever happens, a password in the database URL never appears in any
output, log line, error message or ``--json`` (PostgreSQL here trusts any password, so a URL
with one works; MariaDB refuses a wrong one).

The command matrix runs in-process through the real entry point (fast); a subset runs as the
installed command too, including the long-running worker, scheduler and metrics server.
"""

from __future__ import annotations

import os
import re
import signal
import traceback
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from migrate_cron.errors import MigrateCronError
from migrate_cron.store import Store
from tests.conftest import cli_path, run_cli
from tests.faults.procs import Fleet, cli_env, wait_for
from tests.security.inprocess import TRACEBACK, Result, invoke

SECRET = "S3cretPW"
UNREACHABLE = f"postgresql://postgres:{SECRET}@127.0.0.1:1/x"
WRONG_PASSWORD = f"mariadb://root:{SECRET}@127.0.0.1:3306/test"
UNKNOWN_ROLE = f"postgresql://nosuchuser:{SECRET}@127.0.0.1:5432/test"
CRONTAB = "* * * * * /bin/echo tick\n*/5 * * * * date\n"
# The names generate gives them: what each line runs (a bare `date` with when it runs).
ECHO, DATE = "echo-tick", "date-every-5min"


def matrix() -> list[tuple[str, ...]]:
    """Every command that reads or writes the queue (``echo-tick`` is switched,
    ``date-every-5min`` is not)."""
    return [
        ("status",),
        ("status", "--json"),
        ("status", "--check"),
        ("cleanup",),
        ("cleanup", "--json"),
        ("worker", "--once"),
        ("worker",),
        ("enqueue", ECHO),
        ("enqueue", ECHO, "--json"),
        ("scheduler", "--once", "--all"),
        ("scheduler", "--once", "--all", "--json"),
        ("jobs", "list"),
        ("jobs", "list", "--json"),
        ("jobs", "show", "1"),
        ("jobs", "show", "1", "--json"),
        ("jobs", "retry", "--all-failed", "--yes"),
        ("jobs", "cancel", "1", "--yes"),
        (
            "migrate",
            DATE,
            "--to",
            "enqueue",
            "--crontab",
            "my.cron",
            "--format",
            "user",
            "--url-from-env",
            "--executable",
            cli_path(),
        ),
        (
            "migrate",
            DATE,
            "--to",
            "scheduler",
            "--crontab",
            "my.cron",
            "--format",
            "user",
            "--url-from-env",
            "--executable",
            cli_path(),
        ),
        ("verify", ECHO),
        ("verify", ECHO, "--json"),
        ("migrations",),
        ("migrations", "--json"),
        ("db", "current"),
        ("db", "current", "--json"),
        ("db", "downgrade", "base"),
        ("db", "upgrade"),
    ]


# Commands that keep working without the queue, by design, and say so on stderr: the
# migration overview (file-based progress, "queue not readable here") and verify (a report
# with the failed check, exit 1).
DEGRADED = {("migrations",), ("migrations", "--json")}
REPORTS = {("verify", ECHO), ("verify", ECHO, "--json")}
MANAGES_TABLES = {
    ("db", "current"),
    ("db", "current", "--json"),
    ("db", "downgrade", "base"),
    ("db", "upgrade"),
}


@dataclass(frozen=True)
class Outcome:
    command: tuple[str, ...]
    result: Result


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A crontab with two lines, its registry, and ``echo-tick`` switched to the queue."""
    d = tmp_path / "project"
    d.mkdir()
    (d / "my.cron").write_text(CRONTAB)
    monkeypatch.chdir(d)
    monkeypatch.delenv("MIGRATE_CRON_DATABASE_URL", raising=False)
    monkeypatch.setenv("MIGRATE_CRON_SPOOL", str(tmp_path / "spool"))
    assert invoke("generate", "registry", "my.cron", "--tz", "UTC").code == 0
    db = f"sqlite:///{tmp_path / 'setup.db'}"
    assert invoke("db", "upgrade", "--database-url", db).code == 0
    r = invoke(
        "migrate",
        ECHO,
        "--to",
        "enqueue",
        "--crontab",
        "my.cron",
        "--format",
        "user",
        "--database-url",
        db,
        "--executable",
        cli_path(),
    )
    assert r.code == 0, r.err
    yield d


def run_matrix(url: str, prefix: str, skip: set[tuple[str, ...]] = frozenset()) -> list[Outcome]:  # type: ignore[assignment]
    env = os.environ.copy()
    os.environ["MIGRATE_CRON_DATABASE_URL"] = url  # for --url-from-env
    try:
        return [
            Outcome(cmd, invoke(*cmd, "--database-url", url, "--table-prefix", prefix))
            for cmd in matrix()
            if cmd not in skip
        ]
    finally:
        os.environ.clear()
        os.environ.update(env)


def assert_no_secret(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        assert SECRET not in o.result.both, f"{o.command} printed the password:\n{o.result}"
        assert TRACEBACK not in o.result.both, f"{o.command}:\n{o.result.both}"


def assert_one_error_line(outcomes: list[Outcome], pattern: str, spooled: bool = False) -> None:
    for o in outcomes:
        r = o.result
        if o.command in DEGRADED:
            assert r.code == 0 and re.search(pattern, r.err), (o.command, r)
            continue
        if o.command in REPORTS:
            flat = re.sub(r"\s+", " ", r.out)
            assert r.code == 1 and re.search(pattern, flat), (o.command, r)
            continue
        lines = r.err.strip().splitlines()
        if spooled and o.command[0] == "enqueue":  # the slot is kept in the spool: exit 75
            assert r.code == 75 and len(lines) == 1 and "spooled to" in lines[0], (o.command, r)
        else:
            assert r.code == 1, (o.command, r)
            assert len(lines) == 1 and lines[0].startswith("error: "), (o.command, r.err)
        assert re.search(pattern, lines[0]), (o.command, lines[0])


# ---------------------------------------------------------------------- cannot connect
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        # The URL as the user typed it (not the driver we picked), password masked.
        (UNREACHABLE, r"postgresql://postgres:\*\*\*@127\.0\.0\.1:1/x: .*refused"),
        (WRONG_PASSWORD, r"mariadb://root:\*\*\*@127\.0\.0\.1:3306/test: .*Access denied"),
        (UNKNOWN_ROLE, r"nosuchuser:\*\*\*@127\.0\.0\.1:5432/test: .*role \\?\"nosuchuser"),
    ],
    ids=["unreachable", "wrong-password", "unknown-role"],
)
def test_cannot_connect_is_one_masked_line_and_exit_1(project: Path, url: str, reason: str) -> None:
    outcomes = run_matrix(url, "")
    assert_no_secret(outcomes)
    assert_one_error_line(outcomes, reason, spooled=True)


@pytest.mark.parametrize("url", [UNREACHABLE, WRONG_PASSWORD], ids=["unreachable", "wrong-pw"])
def test_debug_tracebacks_do_not_show_the_password_either(project: Path, url: str) -> None:
    """--debug re-raises: the traceback (with its chained driver errors) is what a user sees."""
    for cmd in (("status", "--json"), ("worker", "--once"), ("enqueue", ECHO)):
        with pytest.raises(MigrateCronError) as info:
            invoke("--debug", *cmd, "--database-url", url)
        shown = "".join(traceback.format_exception(info.value))
        assert "DatabaseUnavailable" in shown
        assert SECRET not in shown


# ---------------------------------------------------------------------- no tables yet
def test_missing_tables_say_run_db_upgrade(project: Path, db_url: str) -> None:
    url = db_url
    if make_url(db_url).get_backend_name() == "postgresql":  # trust: any password works
        url = make_url(db_url).set(password=SECRET).render_as_string(hide_password=False)
    prefix = f"nosuch{uuid.uuid4().hex[:6]}_"
    if url.startswith("sqlite:///"):  # a database without the tables (no file: next test)
        Path(url.removeprefix("sqlite:///")).touch()
    outcomes = run_matrix(url, prefix, skip=MANAGES_TABLES)
    assert_no_secret(outcomes)
    assert_one_error_line(outcomes, r"tables are missing .*run `migrate-cron db upgrade`")
    # db current says the same, without failing: it is how you find out.
    r = invoke("db", "current", "--database-url", url, "--table-prefix", prefix)
    assert r.code == 0 and "migrate-cron db upgrade" in r.both and SECRET not in r.both


# ---------------------------------------------------------------------- the password
@pytest.mark.parametrize("backend", ["postgresql"])
def test_a_working_url_with_a_password_never_shows_it(
    project: Path, store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """Every command, succeeding, with --json too; and a job that prints its environment
    (the worker's URL is not in it: jobs get cron's minimal environment)."""
    url = make_url(db_url).set(password=SECRET).render_as_string(hide_password=False)
    reg = project / "migrate-cron.toml"
    reg.write_text(reg.read_text() + '\n[jobs.leak]\ncommand = "env; exit 3"\nmax_attempts = 1\n')
    store.enqueue(ECHO)  # job 1: the matrix shows, retries and cancels it
    store.enqueue("leak")
    # (The long-running worker would run forever here: it has its own test below.)
    outcomes = run_matrix(url, table_prefix, skip={("db", "downgrade", "base"), ("worker",)})
    assert_no_secret(outcomes)
    by_cmd = {o.command: o.result for o in outcomes}
    assert by_cmd[("worker", "--once")].code == 0
    assert by_cmd[("status", "--json")].code in (0, 1)
    assert "***" in by_cmd[("db", "current")].both  # the URL is shown, masked
    leak = next(iter(store.list_jobs(kind="leak")))
    assert leak.output and "PATH=" in leak.output  # it ran (and `jobs retry` reopened it)
    assert SECRET not in leak.output and "MIGRATE_CRON_DATABASE_URL" not in leak.output
    shown = invoke(
        "jobs", "show", str(leak.id), "--database-url", url, "--table-prefix", table_prefix
    )
    assert shown.code == 0 and SECRET not in shown.both


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://postgres:S3c@{SECRET}@127.0.0.1:1/x",
        f"postgresql://postgres@127.0.0.1:1/x?password={SECRET}",
    ],
    ids=["raw-at-sign", "query-password"],
)
def test_unusual_password_spellings_are_masked_too(url: str) -> None:
    r = invoke("status", "--database-url", url)
    assert r.code == 1
    assert SECRET not in r.both


# ---------------------------------------------------------------------- the installed command
@pytest.mark.parametrize("url", [UNREACHABLE, WRONG_PASSWORD], ids=["unreachable", "wrong-pw"])
def test_installed_commands_from_the_environment_variable(project: Path, url: str) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": url}
    for cmd in (("status", "--json"), ("worker",), ("enqueue", ECHO, "--json")):
        r = run_cli(*cmd, env=env, cwd=project, timeout=60)
        assert SECRET not in r.stdout + r.stderr
        assert TRACEBACK not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r
        if cmd[0] == "enqueue":
            assert r.returncode == 75 and "spooled to" in r.stderr, (cmd, r)
        else:
            assert r.returncode == 1 and r.stderr.startswith("error: "), (cmd, r)


def test_long_running_metrics_logs_the_outage_masked(project: Path, tmp_path: Path) -> None:
    env = cli_env(WRONG_PASSWORD, "", project / "migrate-cron.toml")
    with Fleet(tmp_path) as fleet:
        metrics = fleet.start(["metrics", "--port", "0"], env, label="metrics", cwd=project)
        served = wait_for(
            lambda: re.search(r"http://[\d.]+:\d+/metrics", metrics.output()), 30, "metrics"
        )
        body = urllib.request.urlopen(served.group(0), timeout=10).read().decode()
        assert "migrate_cron_up 0.0" in body
        metrics.signal(signal.SIGTERM)
        metrics.wait(30)
        assert SECRET not in metrics.output() and TRACEBACK not in metrics.output()
        assert SECRET not in body


def test_long_running_scheduler_fails_fast_on_wrong_credentials_at_start(
    project: Path, tmp_path: Path
) -> None:
    env = cli_env(WRONG_PASSWORD, "", project / "migrate-cron.toml")
    with Fleet(tmp_path) as fleet:
        sched = fleet.start(["scheduler", "--all"], env, label="scheduler", cwd=project)
        deadline_ok = True
        try:
            code = sched.popen.wait(8)
        except Exception:
            deadline_ok = False
            code = None
        assert deadline_ok and code == 1, sched.output()
        out = sched.output()
        assert "Access denied" in out and SECRET not in out and TRACEBACK not in out, out


@pytest.mark.parametrize("backend", ["postgresql"])
def test_a_password_on_the_command_line_is_masked_in_ps(
    project: Path, store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """Every user of the host reads every command line (``ps``, ``/proc/PID/cmdline``): a
    long-running worker given ``--database-url`` with a password shows it masked."""
    url = make_url(db_url).set(password=SECRET).render_as_string(hide_password=False)
    env = cli_env("sqlite:///unused.db", table_prefix, project / "migrate-cron.toml")
    with Fleet(tmp_path) as fleet:
        worker = fleet.start(["worker", "--database-url", url], env, label="worker", cwd=project)
        wait_for(lambda: "worker-start" in worker.output(), 30, "the worker to start")
        cmdline = Path(f"/proc/{worker.pid}/cmdline").read_bytes().decode(errors="replace")
        assert SECRET not in cmdline and "postgres:***@" in cmdline, cmdline
        assert "worker --database-url" in cmdline  # still says what runs
        worker.signal(signal.SIGTERM)
        assert worker.wait(30) == 0
        assert SECRET not in worker.output()
