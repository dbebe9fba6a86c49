"""The cron line, end to end through the installed ``migrate-cron``: it writes its slot without
importing SQLAlchemy (``store/direct.py``) on every backend, replays the host's spool the same
way, and still spools and exits 75 when the database is away.

Each call runs under ``python -X importtime``, whose report names every module the process
imported; real databases, no mocks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from migrate_cron.config import mask_url
from migrate_cron.migration.target import Target
from migrate_cron.producer.spool import Spool, target_of
from migrate_cron.store import Store
from tests.conftest import cli_path

REGISTRY = """
[jobs.nightly]
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
command = "true"
max_attempts = 3

[jobs.every5]
schedule = "*/5 * * * *"
command = "true"
overlap = "skip"
"""


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    path = tmp_path / "migrate-cron.toml"
    path.write_text(REGISTRY)
    return path


def cron_line(registry: Path, url: str, prefix: str, name: str = "nightly") -> list[str]:
    """The argument list `migrate --to enqueue` writes into the crontab (without argv[0])."""
    return Target("migrate-cron", str(registry), url, prefix).argv(name)[1:]


def run_traced(*args: str, spool: Path) -> tuple[int, str, str, set[str]]:
    """The installed command under ``-X importtime``: exit code, stdout, stderr without the
    import report, and the top-level packages it imported."""
    res = subprocess.run(
        [sys.executable, "-X", "importtime", cli_path(), *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "MIGRATE_CRON_SPOOL": str(spool)},
        timeout=60,
        check=False,
    )
    report = [line for line in res.stderr.splitlines() if line.startswith("import time:")]
    rest = [line for line in res.stderr.splitlines() if not line.startswith("import time:")]
    packages = {line.split("|")[-1].strip().split(".")[0] for line in report[1:]}
    assert report, res.stderr
    return res.returncode, res.stdout, "".join(f"{line}\n" for line in rest), packages


def test_the_cron_line_writes_its_slot_without_sqlalchemy(
    db_url: str, table_prefix: str, registry: Path, store: Store, tmp_path: Path
) -> None:
    line = cron_line(registry, db_url, table_prefix)
    for _ in range(2):  # a new slot, then the no-op every other host gets
        code, out, err, packages = run_traced(*line, spool=tmp_path / "spool")
        assert (code, out, err) == (0, "", "")
        assert "sqlalchemy" not in packages
    assert "migrate_cron" in packages
    (job,) = store.list_jobs(kind="nightly")
    assert (job.max_attempts, job.payload, job.state) == (3, None, "open")
    (run,) = store.runs("nightly")
    assert (run["job_id"], run["outcome"]) == (job.id, "enqueued")


def test_the_spool_is_replayed_first_without_sqlalchemy(
    db_url: str, table_prefix: str, registry: Path, store: Store, tmp_path: Path
) -> None:
    spool = Spool(tmp_path / "spool")
    missed = datetime(2026, 3, 1, 1, 30, tzinfo=UTC)  # 02:30 in Berlin
    spool.put("nightly", missed, 3, target_of(mask_url(db_url), table_prefix), "test outage")
    args = [*cron_line(registry, db_url, table_prefix), "--slot", "2026-03-02T02:30"]
    args.remove("--quiet")
    code, out, err, packages = run_traced(*args, spool=spool.directory)
    assert (code, out, err) == (0, "enqueued\n", "replayed 1 spooled slot(s) first\n")
    assert "sqlalchemy" not in packages
    assert spool.entries() == []
    slots = sorted(j.scheduled_for for j in store.list_jobs(kind="nightly"))
    assert slots == [missed, datetime(2026, 3, 2, 1, 30, tzinfo=UTC)]


def test_overlap_skip_is_kept_on_the_direct_path(
    db_url: str, table_prefix: str, registry: Path, store: Store, tmp_path: Path
) -> None:
    store.enqueue("every5", ref="earlier")
    assert store.claim("worker-1", n=1, lease=300.0)
    args = [*cron_line(registry, db_url, table_prefix, "every5"), "--slot", "2026-03-01T02:35Z"]
    args.remove("--quiet")
    code, out, err, packages = run_traced(*args, spool=tmp_path / "spool")
    assert (code, err) == (0, "")
    assert out == "skipped (overlap = skip: the previous run is still running)\n"
    assert "sqlalchemy" not in packages
    assert [r["outcome"] for r in store.runs("every5")] == ["skipped"]


@pytest.mark.parametrize(
    "url",
    [
        "mariadb+pymysql://cron:s3cret@127.0.0.1:9/queue",
        "mysql+pymysql://cron:s3cret@127.0.0.1:9/queue",
        "postgresql://cron:s3cret@127.0.0.1:9/queue?sslmode=disable",
    ],
)
def test_an_unreachable_database_spools_the_slot_and_exits_75(
    url: str, registry: Path, tmp_path: Path
) -> None:
    spool = Spool(tmp_path / "spool")
    code, out, err, _ = run_traced(*cron_line(registry, url, "mc_"), spool=spool.directory)
    assert (code, out) == (75, "")
    assert err.startswith("migrate-cron enqueue: the database is unavailable (cannot use the ")
    assert "spooled to" in err and "s3cret" not in err and len(err.splitlines()) == 1
    (entry,) = spool.entries()
    assert (entry.job, entry.max_attempts, entry.target) == ("nightly", 3, f"{mask_url(url)}#mc_")
    assert json.loads(entry.path.read_text())["reason"].startswith("cannot use the database")


def test_an_unwritable_sqlite_file_spools_the_slot_and_exits_75(
    registry: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/no/such/dir/queue.db"
    spool = Spool(tmp_path / "spool")
    code, out, err, _ = run_traced(*cron_line(registry, url, ""), spool=spool.directory)
    assert (code, out) == (75, "")
    assert "unable to open database file" in err and "spooled to" in err
    assert len(spool.entries()) == 1


def test_a_url_the_direct_writer_does_not_map_goes_through_the_store(
    registry: Path, tmp_path: Path
) -> None:
    from migrate_cron.store import open_store

    url = f"sqlite:///{tmp_path}/queue.db?timeout=5"  # a pysqlite argument in the URL
    store = open_store(url)
    store.create_schema()
    try:
        code, out, err, packages = run_traced(*cron_line(registry, url, ""), spool=tmp_path)
        assert (code, out, err) == (0, "", "")
        assert "sqlalchemy" in packages
        assert len(store.list_jobs(kind="nightly")) == 1
    finally:
        store.dispose()
