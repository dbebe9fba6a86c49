"""The tails that hid failures under cron, found and (with --strip-swallow) removed from the
registry's command; quoted text is never touched. Through the installed command: migrate says
what now matters, each with the registry edit."""

from __future__ import annotations

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


def test_migrate_says_what_matters_and_strips_on_request(tmp_path: Path) -> None:
    crontab = tmp_path / "crontab"
    line = (
        "30 2 * * * cd /srv && flock -n /tmp/i.lock php artisan invoices:export"
        " >/dev/null 2>&1 || true\n"
    )
    crontab.write_text(line)
    env = {"MIGRATE_CRON_REGISTRY": str(tmp_path / "migrate-cron.toml")}
    url = f"sqlite:///{tmp_path / 'q.db'}"
    assert (
        run_cli("generate", "registry", str(crontab), "--format", "user", env=env).returncode == 0
    )
    assert run_cli("db", "upgrade", "--database-url", url, env=env).returncode == 0
    plain = run_cli(
        "migrate", "invoices-export", "--format", "user", "--dry-run", "--database-url", url,
        env=env,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    text = " ".join(plain.stderr.split())
    assert "hides failures (|| true, >/dev/null)" in text and "--strip-swallow" in text
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
    assert crontab.read_text() == line
