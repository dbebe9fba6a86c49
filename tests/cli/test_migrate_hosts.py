"""A line that lived on several hosts becomes one job: ``generate registry HOST:PATH…``,
``migrate`` of every origin, each host's rewritten line fired for the same slot, one job in
the queue; ``rollback`` gives every file back byte for byte. The installed command, a real
database (SQLite, PostgreSQL, MariaDB)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from migrate_cron.crontab.parser import parse_crontab
from migrate_cron.store import Store
from tests.conftest import run_cli

LINE = "30 2 * * * {user} /usr/local/bin/import-orders --since=yesterday\n"
HOSTS = {"web1": "www-data", "web2": "www-data", "web3": "deploy"}


@pytest.fixture
def hosts(tmp_path: Path) -> dict[str, Path]:
    """Each host's /etc/cron.d/shop, copied here as HOST/cron.d/shop (a system crontab by
    its place), with its own comments around the same line."""
    files = {}
    for host, user in HOSTS.items():
        path = tmp_path / host / "cron.d" / "shop"
        path.parent.mkdir(parents=True)
        path.write_bytes(
            f"# {host}: managed by hand\nMAILTO=ops@example.com\n".encode()
            + LINE.format(user=user).encode()
            + b"0 4 * * * root /usr/local/bin/only-on-"
            + host.encode()
            + b"\n"
        )
        files[host] = path
    return files


def _env(db_url: str, table_prefix: str, registry: Path) -> dict[str, str]:
    return {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
    }


def _fire(path: Path) -> None:
    """Run the job lines of a switched crontab the way cron would at their minute."""
    for line in parse_crontab(path.read_bytes(), str(path)).jobs:
        if "migrate-cron" in (line.shell_command or ""):
            done = subprocess.run(
                ["/bin/sh", "-c", line.shell_command or ""],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr


def test_one_job_for_a_line_on_two_hosts_and_another_for_another_user(
    tmp_path: Path, hosts: dict[str, Path], db_url: str, table_prefix: str, store: Store
) -> None:
    registry = tmp_path / "migrate-cron.toml"
    env = _env(db_url, table_prefix, registry)
    originals = {host: path.read_bytes() for host, path in hosts.items()}
    args = [f"{host}:{path}" for host, path in hosts.items()]
    done = run_cli("generate", "registry", *args, "--json", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    jobs = tomllib.loads(registry.read_text())["jobs"]
    same = jobs["import-orders-www-data"]
    assert [(s["host"], s["user"]) for s in same["sources"]] == [
        ("web1", "www-data"),
        ("web2", "www-data"),
    ]
    assert same["user"] == "www-data"
    other = jobs["import-orders-deploy"]
    assert (other["source"]["host"], other["user"]) == ("web3", "deploy")

    analysis = run_cli("analyze", *args, "--json", env=env, cwd=tmp_path)
    why = [
        f["message"]
        for entry in json.loads(analysis.stdout)["entries"]
        if entry["host"] == "web3"
        for f in entry["findings"]
        if f["rule"] == "duplicate-host"
    ]
    assert any("runs as www-data there, deploy here" in m for m in why), why

    for name in ("import-orders-www-data", "import-orders-deploy"):
        moved = run_cli("migrate", name, "--database-url", db_url, env=env, cwd=tmp_path)
        assert moved.returncode == 0, moved.stderr
    for host, path in hosts.items():
        after = parse_crontab(path.read_bytes(), str(path))
        assert after.format == "system"
        assert [j.user for j in after.jobs] == [HOSTS[host], "root"]
        _fire(path)
    assert len(store.list_jobs(kind="import-orders-www-data")) == 1
    assert len(store.list_jobs(kind="import-orders-deploy")) == 1

    verified = run_cli("verify", "import-orders-www-data", "--json", env=env, cwd=tmp_path)
    report = json.loads(verified.stdout)
    slots = [c for c in report["checks"] if c["key"] == "slots"]
    origins = [c["data"]["origin"] for c in slots]
    assert origins == ["web1:web1/cron.d/shop", "web2:web2/cron.d/shop"]
    assert all(c["status"] == "ok" for c in slots), slots

    for name in ("import-orders-www-data", "import-orders-deploy"):
        back = run_cli("rollback", name, env=env, cwd=tmp_path)
        assert back.returncode == 0, back.stderr
    for host, path in hosts.items():
        assert path.read_bytes() == originals[host], host
    assert all(j["mode"] == "cron" for j in tomllib.loads(registry.read_text())["jobs"].values())


def test_one_host_at_a_time_ends_in_the_same_single_job(
    tmp_path: Path, hosts: dict[str, Path], db_url: str, table_prefix: str, store: Store
) -> None:
    registry = tmp_path / "migrate-cron.toml"
    env = _env(db_url, table_prefix, registry)
    originals = {host: path.read_bytes() for host, path in hosts.items()}
    pair = [f"{h}:{hosts[h]}" for h in ("web1", "web2")]
    assert run_cli("generate", "registry", *pair, env=env, cwd=tmp_path).returncode == 0
    first = run_cli(
        "migrate", "import-orders", "--crontab", pair[0], "--database-url", db_url,
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert "web2" in first.stderr and "still run it from cron" in first.stderr
    assert hosts["web2"].read_bytes() == originals["web2"]
    # While web2 still runs the command itself, verify says so and names the next command.
    half = json.loads(run_cli("verify", "import-orders", "--json", env=env, cwd=tmp_path).stdout)
    dual = next(c for c in half["checks"] if c["key"] == "dual")
    assert dual["status"] == "fail"
    assert any(f"--crontab {pair[1]}" in d for d in dual["details"]), dual
    second = run_cli(
        "migrate", "import-orders", "--crontab", pair[1], "--database-url", db_url,
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    again = run_cli("migrate", "import-orders", "--database-url", db_url, env=env, cwd=tmp_path)
    assert again.returncode == 0 and "nothing to do" in again.stderr
    for host in ("web1", "web2"):
        _fire(hosts[host])
    assert len(store.list_jobs(kind="import-orders")) == 1
    # Roll back one host: the job stays switched for the other; then the second.
    one = run_cli("rollback", "import-orders", "--crontab", pair[0], env=env, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert tomllib.loads(registry.read_text())["jobs"]["import-orders"]["mode"] == "enqueue"
    assert hosts["web1"].read_bytes() == originals["web1"]
    assert run_cli("rollback", "import-orders", env=env, cwd=tmp_path).returncode == 0
    assert hosts["web2"].read_bytes() == originals["web2"]
    assert tomllib.loads(registry.read_text())["jobs"]["import-orders"]["mode"] == "cron"


def test_a_host_that_is_not_an_origin_is_refused(tmp_path: Path, hosts: dict[str, Path]) -> None:
    registry = tmp_path / "migrate-cron.toml"
    env = {"MIGRATE_CRON_REGISTRY": str(registry)}
    pair = [f"{h}:{hosts[h]}" for h in ("web1", "web2")]
    assert run_cli("generate", "registry", *pair, env=env, cwd=tmp_path).returncode == 0
    before = registry.read_bytes()
    done = run_cli(
        "migrate", "import-orders", "--crontab", f"web9:{hosts['web1']}", "--dry-run",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "matches 0 of import-orders's origins" in done.stderr
    assert registry.read_bytes() == before
