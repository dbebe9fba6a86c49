"""The tails that hid failures under cron, found and (with --strip-swallow) removed from the
registry's command; quoted text is never touched. Through the installed command: migrate says
what now matters, each with the registry edit."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from migrate_cron.migration.swallow import strip_swallow, swallowers
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("command", "found", "stripped"),
    [
        ("php x > /dev/null 2>&1 || true", ["|| true", "> /dev/null"], "php x"),
        ("cd /srv && php y; exit 0", ["; exit 0"], "cd /srv && php y"),
        ("run 2>/dev/null >> /var/log/run.log", ["2>/dev/null"], "run >> /var/log/run.log"),
        ('echo "a > /dev/null || true"', [], 'echo "a > /dev/null || true"'),
        ("php z &>/dev/null || :", ["|| :", "&>/dev/null"], "php z"),
        ("backup.sh >> /var/log/b.log 2>&1", [], "backup.sh >> /var/log/b.log 2>&1"),
    ],
)
def test_swallowers_found_and_stripped(command: str, found: list[str], stripped: str) -> None:
    assert swallowers(command) == found
    assert strip_swallow(command) == stripped


def _project(
    tmp_path: Path, line: str, url: str = "", prefix: str = ""
) -> tuple[dict[str, str], str]:
    crontab = tmp_path / "crontab"
    crontab.write_text(line)
    env = {
        "MIGRATE_CRON_REGISTRY": str(tmp_path / "migrate-cron.toml"),
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
    }
    url = url or f"sqlite:///{tmp_path / 'q.db'}"
    assert (
        run_cli("generate", "registry", str(crontab), "--format", "user", env=env).returncode == 0
    )
    assert run_cli("db", "upgrade", "--database-url", url, env=env).returncode == 0
    return env, url


def _command(tmp_path: Path, name: str) -> str:
    return tomllib.loads((tmp_path / "migrate-cron.toml").read_text())["jobs"][name]["command"]


def test_migrate_says_what_matters_and_strips_on_request(tmp_path: Path) -> None:
    line = (
        "30 2 * * * cd /srv && flock -n /tmp/i.lock php artisan invoices:export"
        " >/dev/null 2>&1 || true\n"
    )
    env, url = _project(tmp_path, line)
    plain = run_cli(
        "migrate", "invoices-export", "--format", "user", "--dry-run", "--database-url", url,
        env=env,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    text = " ".join(plain.stderr.split())
    assert "ended in `|| true`, which reports success when it fails" in text
    assert "--keep-swallow keeps cron's behaviour" in text
    assert "The registry's command becomes 'cd /srv" in text  # a dry run: not "is now"
    assert "output goes to /dev/null (>/dev/null)" in text and "--strip-swallow" in text
    assert "add `timeout = 3600` (seconds) to [jobs.invoices-export]" in text
    assert "flock is redundant now" in text
    done = run_cli(
        "migrate", "invoices-export", "--format", "user", "--strip-swallow", "--database-url",
        url, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = tomllib.loads((tmp_path / "migrate-cron.toml").read_text())["jobs"]["invoices-export"]
    assert job["command"] == "cd /srv && flock -n /tmp/i.lock php artisan invoices:export"
    assert job["source"]["text"] == line.rstrip("\n")
    assert run_cli("rollback", "invoices-export", env=env).returncode == 0
    assert (tmp_path / "crontab").read_text() == line


def test_a_swallowed_failure_is_red_not_green(
    tmp_path: Path, db_url: str, table_prefix: str
) -> None:
    """`cd` into a missing directory `|| true`: under cron the failure was silent. migrate
    removes the tail by default, so the worker records the failure; kept with
    --keep-swallow, the run is `done` and verify fails on it."""
    line = "*/5 * * * * cd /nonexistent-dir-mct && ./export.sh || true\n"
    env, url = _project(tmp_path, line, db_url, table_prefix)
    db = ["--database-url", url]
    name = "export"
    kept = run_cli("migrate", name, "--format", "user", "--keep-swallow", *db, env=env)
    assert kept.returncode == 0, kept.stderr
    assert _command(tmp_path, name).endswith("|| true")
    assert "--keep-swallow: the command still ends in `|| true`" in " ".join(kept.stderr.split())
    assert run_cli("enqueue", name, "--slot", "2026-01-01T00:05:00Z", *db, env=env).returncode == 0
    assert run_cli("worker", "--once", *db, env=env).returncode == 0
    shown = run_cli("jobs", "list", "--json", *db, env=env)
    assert '"state": "done"' in shown.stdout  # cron's behaviour, kept on request
    verify = run_cli("verify", name, "--json", *db, env=env)
    assert verify.returncode == 1
    checks = {c["key"]: c for c in json.loads(verify.stdout)["checks"]}
    assert checks["failures"]["status"] == "fail"
    assert "recorded done" in checks["failures"]["summary"]
    assert "never retries it" in checks["failures"]["summary"]

    assert run_cli("rollback", name, env=env).returncode == 0
    switched = run_cli("migrate", name, "--format", "user", *db, env=env)
    assert switched.returncode == 0, switched.stderr
    assert _command(tmp_path, name) == "cd /nonexistent-dir-mct && ./export.sh"
    assert run_cli("enqueue", name, "--slot", "2026-01-01T00:10:00Z", *db, env=env).returncode == 0
    assert run_cli("worker", "--once", *db, env=env).returncode == 0
    jobs = json.loads(run_cli("jobs", "list", "--json", *db, env=env).stdout)
    rows = jobs["jobs"] if isinstance(jobs, dict) else jobs
    newest = max(rows, key=lambda j: j["id"])
    # Recorded as a failure, to be retried, never done. Full-jitter backoff can make the
    # first retry due at once, so `--once` may already have run it again: attempts >= 1.
    assert newest["state"] in ("open", "failed") and newest["attempts"] >= 1, newest
    assert newest["last_error"], newest
    verify = run_cli("verify", name, "--json", *db, env=env)
    checks = {c["key"]: c for c in json.loads(verify.stdout)["checks"]}
    assert checks["failures"]["status"] == "ok"


@pytest.mark.parametrize(
    "command",
    [
        "a || true # a comment the cut would keep",
        "a || b || true",
        "a; b |& tee x || :",
    ],
)
def test_a_tail_is_cut_only_where_the_tree_agrees(command: str) -> None:
    """What the cut leaves must parse to the same commands less the tail; else nothing is cut."""
    from migrate_cron.analysis.tree import parse
    from migrate_cron.migration.swallow import strip_tail

    out = strip_tail(command)
    if out is not None:
        before = [c.argv for c in parse(command).top][:-1]
        assert [c.argv for c in parse(out).top] == before
