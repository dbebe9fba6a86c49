"""``migrate-cron db upgrade|downgrade|current`` from the installed command, on SQLite,
PostgreSQL and MariaDB: the packaged revision applied without an alembic.ini, matching
``schema.py`` exactly, and reverted without leaving anything behind."""

from __future__ import annotations

import json
from pathlib import Path

from migrate_cron.generate.revision import revision_id
from migrate_cron.store import open_store
from tests.conftest import run_cli
from tests.generate.live_schema import schema_diff, tables_with_prefix


def db(*args: str, url: str, prefix: str, cwd: Path) -> tuple[int, str, str]:
    result = run_cli(
        "db", *args, "--database-url", url, "--table-prefix", prefix, cwd=cwd, timeout=120
    )
    return result.returncode, result.stdout, " ".join(result.stderr.split())  # rich wraps


def test_upgrade_matches_schema_py_and_downgrade_leaves_nothing(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    names = ("job", "scheduled_runs", "job_leases", "side_effects", "job_attempts")
    console = {
        f"{table_prefix}{n}"
        for n in ("job_workers", "job_actions", "job_tallies", "job_trend_periods")
    }
    ours = {f"{table_prefix}{n}" for n in names} | console
    version_table = f"{table_prefix}migrate_cron_alembic_version"
    try:
        rc, out, err = db("current", "--check", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert (rc, out) == (1, ""), err
        assert "no tables yet" in err or "no database yet" in err  # SQLite: no file made
        if db_url.startswith("sqlite:///"):
            assert not Path(db_url.removeprefix("sqlite:///")).exists()

        rc, out, err = db("upgrade", "--json", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err
        state = json.loads(out)
        assert state["before"] == []
        assert state["current"] == [revision_id(table_prefix)]
        assert state["up_to_date"] is True
        assert state["version_table"] == version_table
        assert tables_with_prefix(db_url, table_prefix) == {*ours, version_table}
        assert schema_diff(db_url, table_prefix) == []

        rc, out, err = db("current", "--check", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err
        assert out == f"{revision_id(table_prefix)} (head)\n"

        rc, _, err = db("upgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err
        assert "nothing to upgrade" in err

        rc, _, err = db("downgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err  # one step back: status's run-time index goes, nothing else
        rc, out, err = db("current", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert out == f"{revision_id(table_prefix, 5)}\n", err
        assert [(d[0], d[1].name) for d in schema_diff(db_url, table_prefix)] == [
            ("add_index", f"{table_prefix}job_attempts_done_idx")
        ]
        _status_works_without_step_6(db_url, table_prefix)

        rc, _, err = db("downgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err  # one step back: the console's tables and ready_at go
        ours -= console
        assert tables_with_prefix(db_url, table_prefix) == {*ours, version_table}
        rc, out, err = db("current", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert out == f"{revision_id(table_prefix, 4)}\n", err
        _history_works_without_step_5(db_url, table_prefix)

        rc, _, err = db("downgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err  # one step back: the text columns stay utf8mb4 (nothing to undo)
        assert tables_with_prefix(db_url, table_prefix) == {*ours, version_table}
        rc, out, err = db("current", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert out == f"{revision_id(table_prefix, 3)}\n", err

        rc, _, err = db("downgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err  # one more: the history goes, the queue and ledger stay
        assert tables_with_prefix(db_url, table_prefix) == {
            *(ours - {f"{table_prefix}job_attempts"}),
            version_table,
        }
        rc, out, err = db("current", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert out == f"{revision_id(table_prefix, 2)}\n", err

        rc, _, err = db("upgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err  # an install from before the history gets it from `db upgrade`
        assert schema_diff(db_url, table_prefix) == []

        rc, _, err = db("downgrade", "base", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err
        assert tables_with_prefix(db_url, table_prefix) == set()

        rc, _, err = db("downgrade", "base", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 0, err
        assert "nothing to downgrade" in err
    finally:
        if tables_with_prefix(db_url, table_prefix):
            run_cli("db", "downgrade", "base", "--database-url", db_url,
                    "--table-prefix", table_prefix, timeout=120)  # fmt: skip


def _status_works_without_step_6(db_url: str, table_prefix: str) -> None:
    """A package upgraded before ``db upgrade``: status reads the same run times without the
    index (only slower)."""
    from datetime import UTC, datetime, timedelta

    from migrate_cron.store.models import AttemptRun

    store = open_store(db_url, prefix=table_prefix)
    try:
        ids = [store.enqueue("before-6", None).job_id for _ in range(3)]
        store.claim("w1", n=3, lease=30)
        now = store.db_now()
        runs = {
            i: AttemptRun(now - timedelta(seconds=s), now)
            for i, s in zip(ids, (1, 2, 4), strict=True)
        }
        assert store.complete("w1", ids, runs=runs) == 3
        [kind] = store.status(datetime.now(UTC) - timedelta(hours=1)).kinds
        assert (kind.kind, kind.done, kind.duration_p50, kind.duration_max) == ("before-6", 3, 2, 4)
    finally:
        store.dispose()


def _history_works_without_step_5(db_url: str, table_prefix: str) -> None:
    """A package upgraded before ``db upgrade``: runs still write and read their history,
    without the wait's start (``ready_at``) the database cannot hold yet."""
    from datetime import UTC, datetime

    from migrate_cron.store.models import AttemptRun

    store = open_store(db_url, prefix=table_prefix)
    try:
        assert store.console_enabled() is False
        job_id = store.enqueue("old-schema", None).job_id
        [job] = store.claim("w1", n=1, lease=30)
        now = datetime.now(UTC)
        run = AttemptRun(now, now, exit_code=0, ready_at=job.run_at)
        assert store.complete("w1", [job_id], runs={job_id: run}) == 1
        [attempt] = store.attempts(job_id)
        assert (attempt.exit_code, attempt.ready_at) == (0, None)
    finally:
        store.dispose()


def test_the_store_works_on_tables_made_by_the_revision(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    rc, _, err = db("upgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
    assert rc == 0, err
    store = open_store(db_url, prefix=table_prefix)
    try:
        store.enqueue("report", {"n": 1})
        jobs = store.claim("w1", n=1, lease=30)
        assert [job.kind for job in jobs] == ["report"]
        assert jobs[0].payload == {"n": 1}
        assert jobs[0].run_at.tzinfo is not None
    finally:
        store.dispose()
        db("downgrade", "base", url=db_url, prefix=table_prefix, cwd=tmp_path)
    assert tables_with_prefix(db_url, table_prefix) == set()


def test_default_prefix_uses_the_packaged_revision(tmp_path: Path) -> None:
    """No --table-prefix, no URL: the default SQLite file in the current directory."""
    result = run_cli("db", "upgrade", cwd=tmp_path, env={"MIGRATE_CRON_TABLE_PREFIX": ""})
    assert result.returncode == 0, result.stderr
    url = f"sqlite:///{tmp_path / 'migrate-cron.db'}"
    assert tables_with_prefix(url, "") == {
        "job",
        "scheduled_runs",
        "job_leases",
        "side_effects",
        "job_attempts",
        "job_workers",
        "job_actions",
        "job_tallies",
        "job_trend_periods",
        "migrate_cron_alembic_version",
    }
    assert schema_diff(url, "") == []
    current = run_cli(
        "db", "current", "--json", cwd=tmp_path, env={"MIGRATE_CRON_TABLE_PREFIX": ""}
    )
    assert json.loads(current.stdout)["current"] == [revision_id("")]
    down = run_cli("db", "downgrade", "base", cwd=tmp_path, env={"MIGRATE_CRON_TABLE_PREFIX": ""})
    assert down.returncode == 0, down.stderr
    assert tables_with_prefix(url, "") == set()


def test_unreachable_database_is_one_error_without_password(tmp_path: Path) -> None:
    url = "postgresql://app:s3cret@127.0.0.1:1/app"
    for command in (("upgrade",), ("downgrade",), ("current",)):
        result = run_cli("db", *command, "--database-url", url, cwd=tmp_path)
        assert result.returncode == 1, result.stderr
        assert result.stdout == ""
        assert result.stderr.count("error:") == 1
        assert "cannot use the database" in " ".join(result.stderr.split())
        assert "s3cret" not in result.stderr
        assert "Traceback" not in result.stderr


def test_tables_created_outside_db_upgrade_are_reported(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    store = open_store(db_url, prefix=table_prefix)
    store.create_schema()
    try:
        rc, _, err = db("upgrade", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 1
        assert "nor any Alembic version table records them" in err
        assert "Traceback" not in err
        rc, _, err = db("downgrade", "base", url=db_url, prefix=table_prefix, cwd=tmp_path)
        assert rc == 1, err  # not "nothing to downgrade": the tables are there
        assert "records them" in err
    finally:
        store.drop_schema()
        store.dispose()
        db("downgrade", "base", url=db_url, prefix=table_prefix, cwd=tmp_path)
    assert tables_with_prefix(db_url, table_prefix) == set()


def test_unknown_revision_is_one_error(tmp_path: Path) -> None:
    result = run_cli("db", "upgrade", "nosuchrev", cwd=tmp_path)
    assert result.returncode == 1
    assert "nosuchrev" in result.stderr
    assert result.stderr.count("error:") == 1
    assert "Traceback" not in result.stderr
