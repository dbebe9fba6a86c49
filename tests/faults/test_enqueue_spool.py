"""A database that stalls or is gone at ``enqueue`` time loses no cron run: the slot goes to
the local spool, ``enqueue`` exits 75 within 30 s, and the next ``enqueue`` that reaches the
database replays it (docs/reliability.md, "enqueue while the database is away")."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrate_cron.store import Store, open_store
from tests.conftest import BACKENDS, IN_CI, cli_path, fresh_store, run_cli
from tests.faults.proxy import StallingProxy, upstream_of, via_proxy

REGISTRY = '[jobs.export]\ncommand = "true"\nschedule = "*/5 * * * *"\n'


def _env(url: str, prefix: str, tmp_path: Path) -> dict[str, str]:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    return {
        "MIGRATE_CRON_DATABASE_URL": url,
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
        "MIGRATE_CRON_SPOOL": str(tmp_path / "spool"),
    }


def _slots(store: Store) -> list[str]:
    return sorted(str(r["scheduled_for"])[:16] for r in store.runs("export"))


def test_a_stalled_database_spools_the_slot_and_the_next_enqueue_replays_it(
    server_url: str, table_prefix: str, tmp_path: Path
) -> None:
    store = open_store(server_url, prefix=table_prefix)
    store.create_schema()
    try:
        with StallingProxy(*upstream_of(server_url)) as proxy:
            env = _env(via_proxy(server_url, proxy), table_prefix, tmp_path)
            proxy.freeze()
            started = time.monotonic()
            first = run_cli("enqueue", "export", "--slot", "2026-03-01T02:30", env=env, timeout=60)
            took = time.monotonic() - started
            assert first.returncode == 75, first.stderr
            assert took < 30, f"enqueue took {took:.1f}s against a stalled database"
            assert "spooled" in first.stderr and len(first.stderr.strip().splitlines()) == 1
            listed = json.loads(run_cli("spool", "list", "--json", env=env).stdout)
            assert [s["job"] for s in listed["slots"]] == ["export"]
            spooled = Path(listed["slots"][0]["file"])
            assert stat.S_IMODE(os.stat(spooled).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(spooled.parent).st_mode) == 0o700
            assert _slots(store) == []

            proxy.thaw()
            second = run_cli("enqueue", "export", "--slot", "2026-03-01T02:35", env=env, timeout=60)
            assert second.returncode == 0, second.stderr
            assert _slots(store) == ["2026-03-01 02:30", "2026-03-01 02:35"]
            assert store.count_jobs(kind="export") == 2
            assert json.loads(run_cli("spool", "list", "--json", env=env).stdout)["count"] == 0
            for _ in range(2):
                flush = run_cli("spool", "flush", env=env, timeout=60)
                assert flush.returncode == 0, flush.stderr
            assert store.count_jobs(kind="export") == 2
    finally:
        store.drop_schema()
        store.dispose()


def test_a_refused_connection_spools_and_only_its_own_database_takes_it(
    server_url: str, table_prefix: str, tmp_path: Path
) -> None:
    store = open_store(server_url, prefix=table_prefix)
    store.create_schema()
    try:
        proxy = StallingProxy(*upstream_of(server_url))
        url = via_proxy(server_url, proxy)
        proxy.close()  # nothing listens on that port any more: connection refused
        env = _env(url, table_prefix, tmp_path)
        down = run_cli("enqueue", "export", "--slot", "2026-03-01T02:30", env=env, timeout=60)
        assert down.returncode == 75, down.stderr
        # The spool belongs to the database it was meant for: another URL does not take it.
        entries = json.loads(run_cli("spool", "list", "--json", env=env).stdout)["slots"]
        assert len(entries) == 1 and entries[0]["slot"].startswith("2026-03-01T02:30")
        real = {**env, "MIGRATE_CRON_DATABASE_URL": server_url}
        assert json.loads(run_cli("spool", "flush", "--json", env=real).stdout)["flushed"] == []
    finally:
        store.drop_schema()
        store.dispose()


# ----------------------------------------------- a spool that cannot be written (issue 30)
# The spool is the last line of defence: a full disk or a file where the directory should be
# must not lose the run. These tests need root (a small tmpfs for the full disk, a private
# mount namespace in which /var/spool is the test's own directory); CI runs as root.


@dataclass
class Outage:
    """The test's database, made unreachable and reachable again, per backend."""

    url: str
    store: Store
    down: Callable[[], None]
    up: Callable[[], None]


@pytest.fixture(params=BACKENDS)
def outage(request: pytest.FixtureRequest, table_prefix: str, tmp_path: Path) -> Iterator[Outage]:
    if request.param == "sqlite":
        # The database file's directory is missing: "unable to open database file".
        where = tmp_path / "db"
        where.mkdir()
        url = f"sqlite:///{where / 'q.db'}"
        with fresh_store(url, table_prefix) as store:
            moved = tmp_path / "db-away"
            yield Outage(url, store, lambda: where.rename(moved), lambda: moved.rename(where))
        return
    server = request.getfixturevalue(
        "pg_database" if request.param == "postgresql" else "mariadb_database"
    )
    with fresh_store(server, table_prefix) as store, StallingProxy(*upstream_of(server)) as proxy:
        # Frozen: the server accepts and never answers; the connect timeout ends the wait.
        yield Outage(via_proxy(server, proxy), store, proxy.freeze, proxy.thaw)


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs filled to the last block: the full disk."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        if IN_CI:
            pytest.fail("CI must run as root to test a full spool disk")
        pytest.skip("needs root to mount a small tmpfs")
    where = tmp_path / "full"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(where)],
                   check=True, timeout=30)  # fmt: skip
    try:
        with contextlib.suppress(OSError), open(where / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, timeout=30)


def _in_namespace(
    args: list[str], env: dict[str, str], var_spool: str
) -> subprocess.CompletedProcess[str]:
    """The installed command in a private mount namespace where ``var_spool`` (a directory to
    bind, or ``ro`` for a read-only tmpfs) stands at /var/spool: the machine's is never
    touched."""
    mount = (
        "mount -t tmpfs -o ro,size=16k tmpfs /var/spool"
        if var_spool == "ro"
        else f'mount --bind "{var_spool}" /var/spool'
    )
    full = {**os.environ, **env}
    full.pop("MIGRATE_CRON_DEBUG", None)
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f'{mount} && exec "$@"', "sh", cli_path(), *args],
        capture_output=True, text=True, env=full, timeout=120, check=False,
    )  # fmt: skip


#: A frozen server is given up on after 2 s (PyMySQL waits for the handshake on its read
#: timeout, not its connect timeout).
QUICK_TIMEOUTS = {"MIGRATE_CRON_CONNECT_TIMEOUT": "2", "MIGRATE_CRON_IO_TIMEOUT": "2"}


def _parts(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*.part")]


def test_a_full_spool_disk_falls_back_to_the_next_place_and_replay_finds_it(
    outage: Outage, table_prefix: str, full_tmpfs: Path, tmp_path: Path
) -> None:
    var_spool = tmp_path / "var-spool"
    var_spool.mkdir()
    env = {
        **_env(outage.url, table_prefix, tmp_path),
        "MIGRATE_CRON_SPOOL": str(full_tmpfs / "spool"),
        **QUICK_TIMEOUTS,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    outage.down()
    down = _in_namespace(["enqueue", "export", "--slot", "2026-03-01T02:30"], env, str(var_spool))
    assert down.returncode == 75, down.stderr
    line = down.stderr.strip()
    assert len(down.stderr.splitlines()) == 1 and "Traceback" not in down.stderr
    fallback = "/var/spool/migrate-cron/"
    assert f"spooled to {fallback}" in line, line
    assert f"(not in {full_tmpfs / 'spool'}: No space left on device)" in line, line
    assert _parts(full_tmpfs) == [], "a failed write leaves no temporary file"
    assert len(list((var_spool / "migrate-cron").glob("*.slot.json"))) == 1
    listed = json.loads(_in_namespace(["spool", "list", "--json"], env, str(var_spool)).stdout)
    mine = [s for s in listed["slots"] if s["target"].endswith(f"#{table_prefix}")]
    assert [(s["job"], s["file"].startswith(fallback)) for s in mine] == [("export", True)]

    outage.up()
    up = _in_namespace(["enqueue", "export", "--slot", "2026-03-01T02:35"], env, str(var_spool))
    assert up.returncode == 0, up.stderr
    assert _slots(outage.store) == ["2026-03-01 02:30", "2026-03-01 02:35"]
    assert list((var_spool / "migrate-cron").glob("*.slot.json")) == []


def test_when_no_place_takes_the_slot_one_line_says_where_it_could_not_go(
    outage: Outage, table_prefix: str, full_tmpfs: Path, tmp_path: Path
) -> None:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    env = {
        **_env(outage.url, table_prefix, tmp_path),
        "MIGRATE_CRON_SPOOL": str(full_tmpfs / "spool"),
        **QUICK_TIMEOUTS,
        "XDG_STATE_HOME": str(not_a_dir),
        "TMPDIR": str(full_tmpfs),
    }
    outage.down()
    res = _in_namespace(["enqueue", "export", "--slot", "2026-03-01T02:30"], env, "ro")
    assert res.returncode == 75, res.stderr
    assert len(res.stderr.splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr
    line = res.stderr.strip()
    assert line.startswith("migrate-cron enqueue: the database is unavailable (")
    assert "slot 2026-03-01T02:30:00Z of export could not be spooled anywhere" in line
    for place, why in (
        (full_tmpfs / "spool", "No space left on device"),
        (Path("/var/spool/migrate-cron"), "Read-only file system"),
        (not_a_dir / "migrate-cron" / "spool", "a file, not a directory"),
        (full_tmpfs / f"migrate-cron-{os.geteuid()}", "No space left on device"),
    ):
        assert f"{place}: {why}" in line, (place, line)
    assert "migrate-cron enqueue export --slot 2026-03-01T02:30:00Z" in line
    assert _parts(full_tmpfs, tmp_path) == []
    assert list(tmp_path.rglob("*.slot.json")) == []
    outage.up()
    assert _slots(outage.store) == []
