"""A database whose default character set is latin1 never turns a ``done`` into a ``failed``
(docs/reliability.md, row 15).

A MariaDB of the test's own started with ``--no-defaults`` (compiled-in defaults: latin1) gets
its tables from ``migrate-cron db upgrade``, the installed command; jobs print a check mark,
CJK, an emoji (4 bytes in UTF-8), a NUL byte and an invalid byte, and one fails with a check
mark on stderr. Every text column we create states utf8mb4 and a binary collation, so every
job ends as it ran, its output stored as printed (NUL and the invalid byte as U+FFFD).

The upgrade path: tables made by the previous head revision on that server are latin1; the
worker still records every run as it ended, its text escaped to ASCII where latin1 has no room
(``store.storable.escaped``); ``db upgrade`` then converts the columns, keeping what they held.
The same last resort holds on PostgreSQL, in a database created with ENCODING 'LATIN1'.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from migrate_cron.generate.revision import revision_id
from migrate_cron.store import open_store
from tests.conftest import IN_CI, PG_URL, run_cli
from tests.faults.mariadbserver import ThrowawayMariaDB, server_binaries, throwaway_mariadb
from tests.faults.procs import cli_env

REGISTRY = """\
[jobs.check]
command = '''printf 'ok \\342\\234\\223\\n' '''
[jobs.cjk]
command = '''printf '\\344\\270\\255\\346\\226\\207\\n' '''
[jobs.emoji]
command = '''printf '\\360\\237\\230\\200\\n' '''
[jobs.nul]
command = '''printf 'a\\000b\\n' '''
[jobs.invalid]
command = '''printf 'x\\377y\\n' '''
[jobs.latin]
command = '''printf 'caf\\303\\251\\n' '''
[jobs.fails]
command = '''printf 'broke \\342\\234\\223\\n' >&2; exit 3'''
max_attempts = 1
"""
#: What each job's output must read once stored in utf8mb4 columns.
AS_PRINTED = {
    "check": "ok \u2713\n",
    "cjk": "\u4e2d\u6587\n",
    "emoji": "\U0001f600\n",
    "nul": "a\ufffdb\n",
    "invalid": "x\ufffdy\n",
    "latin": "caf\u00e9\n",
}
#: ... and in latin1 columns: escaped to ASCII where latin1 has no room, é as it is.
ESCAPED = {
    "check": "ok \\u2713\n",
    "cjk": "\\u4e2d\\u6587\n",
    "emoji": "\\U0001f600\n",
    "nul": "a\\x00b\n",
    "invalid": "x\\ufffdy\n",
    "latin": "caf\u00e9\n",
}
TEXT_COLUMNS = """
    SELECT TABLE_NAME, COLUMN_NAME, CHARACTER_SET_NAME, COLLATION_NAME, DATA_TYPE
    FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND CHARACTER_SET_NAME IS NOT NULL
      AND TABLE_NAME <> 'migrate_cron_alembic_version' AND TABLE_NAME LIKE :prefix
"""
#: The tables of schema step 5 (the console's), created by an upgrade from an older head.
CONSOLE = {"job_workers", "job_actions", "job_tallies", "job_trend_periods"}
OURS = {"job", "scheduled_runs", "job_leases", "side_effects", "job_attempts", *CONSOLE}


@pytest.fixture(scope="module")
def latin1_server() -> Iterator[ThrowawayMariaDB]:
    if server_binaries() is None:
        if IN_CI:
            pytest.fail("CI requires the MariaDB server binaries (mariadb-install-db, mariadbd)")
        pytest.skip("no MariaDB server binaries (mariadb-install-db, mariadbd) on PATH")
    with throwaway_mariadb() as server:
        assert server.execute("SELECT @@character_set_server") == [("latin1",)]
        yield server


@pytest.fixture
def latin1_db(latin1_server: ThrowawayMariaDB) -> Iterator[str]:
    """A fresh database on the latin1 server, taking the server's default character set."""
    name = f"l1_{uuid.uuid4().hex[:10]}"
    latin1_server.execute(f"CREATE DATABASE {name}")
    try:
        yield latin1_server.url(name)
    finally:
        latin1_server.execute(f"DROP DATABASE {name}")


def _query(url: str, sql: str, **params: Any) -> list[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql), params))
    finally:
        engine.dispose()


def _text_columns(url: str, prefix: str = "") -> dict[tuple[str, str], tuple[str, str, str]]:
    rows = _query(url, TEXT_COLUMNS, prefix=f"{prefix}%")
    return {(t, c): (cs, coll, kind) for t, c, cs, coll, kind in rows}


def _upgraded(url: str, tmp_path: Path, *revision: str) -> dict[str, str]:
    """The environment of the commands (our registry), after ``db upgrade [REVISION]``."""
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    env = cli_env(url, "", registry)
    _cli("db", "upgrade", *revision, env=env, cwd=tmp_path)
    return env


def _cli(*args: str, env: dict[str, str], cwd: Path) -> str:
    result = run_cli(*args, env=env, cwd=cwd, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    return result.stderr


def _enqueue(url: str, ref: str, kinds: tuple[str, ...]) -> None:
    store = open_store(url)
    try:
        for kind in kinds:
            assert store.enqueue(kind, ref=ref, max_attempts=1).created
    finally:
        store.dispose()


def _run_every_job(env: dict[str, str], cwd: Path, ref: str) -> str:
    """Enqueue one job of each kind under ``ref`` and let one worker run them all."""
    _enqueue(env["MIGRATE_CRON_DATABASE_URL"], ref, (*AS_PRINTED, "fails"))
    log = _cli("worker", "--once", "--concurrency", "4", "--batch", "10", env=env, cwd=cwd)
    assert " ".join(log.split()).count("outcome=") == len(AS_PRINTED) + 1, log
    return log


def _outcomes(url: str, ref: str) -> dict[str, tuple[str, str | None, str | None]]:
    rows = _query(url, "SELECT kind, state, output, last_error FROM job WHERE ref = :r", r=ref)
    return {kind: (state, output, error) for kind, state, output, error in rows}


def _tails(url: str, ref: str) -> dict[str, str | None]:
    rows = _query(
        url,
        "SELECT a.kind, a.output_tail FROM job_attempts a JOIN job j ON j.id = a.job_id "
        "WHERE j.ref = :r",
        r=ref,
    )
    return dict(rows)


def _assert_as_printed(url: str, ref: str, expected: dict[str, str]) -> None:
    outcomes = _outcomes(url, ref)
    for kind, output in expected.items():
        assert outcomes[kind] == ("done", output, None), kind
    state, _output, error = outcomes["fails"]
    assert state == "failed" and error is not None
    mark = "\u2713" if expected is AS_PRINTED else "\\u2713"
    assert f"broke {mark}" in error, error
    tails = _tails(url, ref)
    assert {kind: tails[kind] for kind in expected} == expected


def test_db_upgrade_on_a_latin1_server_gives_utf8mb4_columns_and_every_job_its_outcome(
    latin1_db: str, latin1_server: ThrowawayMariaDB, tmp_path: Path
) -> None:
    env = _upgraded(latin1_db, tmp_path)

    columns = _text_columns(latin1_db)
    assert {table for table, _ in columns} == OURS
    for (table, column), (charset, collation, kind) in columns.items():
        assert charset == "utf8mb4", (table, column)
        # JSON is MariaDB's LONGTEXT with its own utf8mb4_bin; every other column is ours.
        expected = "utf8mb4_bin" if kind == "longtext" else "utf8mb4_nopad_bin"
        assert collation == expected, (table, column, collation)
    tables = _query(
        latin1_db,
        "SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME <> 'migrate_cron_alembic_version'",
    )
    assert dict(tables) == dict.fromkeys(OURS, "utf8mb4_nopad_bin")

    # schema.py itself (what the Store's create_schema makes) says the same, column by column.
    store = open_store(latin1_db, prefix="made_")
    try:
        store.create_schema()
    finally:
        store.dispose()
    made = _text_columns(latin1_db, "made_")
    assert {(t.removeprefix("made_"), c): v for (t, c), v in made.items()} == columns

    _run_every_job(env, tmp_path, "1")
    _assert_as_printed(latin1_db, "1", AS_PRINTED)

    # Case and accents stay distinct in every key, as on the default server.
    for ref in ("User-42", "user-42", "usér-42"):
        _enqueue(latin1_db, ref, ("check",))
    refs = _query(latin1_db, "SELECT ref FROM job WHERE kind = 'check' AND ref LIKE '%42'")
    assert sorted(r for (r,) in refs) == ["User-42", "user-42", "usér-42"]


def test_tables_of_the_previous_head_are_converted_by_db_upgrade(
    latin1_db: str, tmp_path: Path
) -> None:
    env = _upgraded(latin1_db, tmp_path, revision_id("", 3))
    before = _text_columns(latin1_db)
    assert before[("job", "output")][:2] == ("latin1", "latin1_swedish_ci")
    assert before[("job", "ref")][:2] == ("utf8mb4", "utf8mb4_nopad_bin")

    # Not upgraded yet: every run still ends as it ran, its text escaped where latin1 has no room.
    log = _run_every_job(env, tmp_path, "old")
    assert "escaped" in log and "unstorable" not in log
    _assert_as_printed(latin1_db, "old", ESCAPED)

    upgrade = _cli("db", "upgrade", env=env, cwd=tmp_path)
    assert f"-> {revision_id('')}" in " ".join(upgrade.split())
    after = _text_columns(latin1_db)
    assert set(before) <= set(after)
    assert {table for table, _ in set(after) - set(before)} == CONSOLE
    assert {v[0] for v in after.values()} == {"utf8mb4"}
    assert after[("job", "output")][1] == "utf8mb4_nopad_bin"
    _assert_as_printed(latin1_db, "old", ESCAPED)  # converted, not mangled: é is still é

    log = _run_every_job(env, tmp_path, "new")
    assert "escaped" not in log
    _assert_as_printed(latin1_db, "new", AS_PRINTED)


@pytest.fixture
def latin1_pg_db(pg_database: str) -> Iterator[str]:
    """A database with ENCODING 'LATIN1' on the shared PostgreSQL server."""
    name = f"mct_l1_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(
                text(
                    f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' "
                    "TEMPLATE template0"
                )
            )
        yield pg_database.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def test_a_latin1_postgresql_database_gets_every_outcome_escaped_not_failed(
    latin1_pg_db: str, tmp_path: Path
) -> None:
    env = _upgraded(latin1_pg_db, tmp_path)
    log = _run_every_job(env, tmp_path, "1")
    assert "escaped" in log and "unstorable" not in log
    _assert_as_printed(latin1_pg_db, "1", ESCAPED)


def test_a_url_asking_for_another_connection_charset_is_refused(
    latin1_server: ThrowawayMariaDB, tmp_path: Path
) -> None:
    for charset in ("latin1", "utf8"):
        url = latin1_server.url() + f"?charset={charset}"
        result = run_cli("jobs", "list", "--database-url", url, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert f"charset={charset} in the database URL: migrate-cron needs utf8mb4" in " ".join(
            result.stderr.split()
        )
        assert "Traceback" not in result.stderr
