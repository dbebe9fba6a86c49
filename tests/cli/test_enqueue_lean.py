"""The lean ``enqueue NAME`` path (``cli/lean.py``) behaves exactly like the Typer command.

Each case runs twice — the installed command (which takes the lean path) and the full Typer CLI
(``cli.app.main``, what every call went through before) — against twin tables, and compares
stdout, stderr, exit code and the rows written. A real database each time, no mocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.cli.lean import parse
from migrate_cron.config import mask_url
from migrate_cron.migration.target import Target
from migrate_cron.producer.spool import Spool, target_of
from migrate_cron.store import Store
from tests.conftest import cli_path, fresh_store

REGISTRY = """
[jobs.nightly]
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
command = "true"
max_attempts = 3

[jobs.every5]
schedule = "*/5 * * * *"
command = "true"
"""

FULL_CLI = [
    sys.executable,
    "-c",
    "import sys; from migrate_cron.cli.app import main; sys.argv[0] = 'migrate-cron'; main()",
]
#: What the installed command must not import on the lean path.
HEAVY = ("typer", "rich", "pydantic", "migrate_cron.cli.app", "migrate_cron.cli.common")


def run(cmd: list[str], *args: str, env: dict[str, str]) -> tuple[int, str, str]:
    full_env = {**os.environ, **env}
    full_env.pop("MIGRATE_CRON_DEBUG", None)
    res = subprocess.run(
        [*cmd, *args], capture_output=True, text=True, env=full_env, timeout=60, check=False
    )
    return res.returncode, res.stdout, res.stderr


def lean(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    return run([cli_path()], *args, env=env)


def full(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    return run(FULL_CLI, *args, env=env)


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    path = tmp_path / "migrate-cron.toml"
    path.write_text(REGISTRY)
    return path


@pytest.fixture
def twin(db_url: str, table_prefix: str, store: Store) -> Iterator[Store]:
    """The same tables under a second prefix: the full CLI writes there, the lean path into
    ``store``, and the two are compared."""
    with fresh_store(db_url, f"{table_prefix}f") as other:
        yield other


def rows(store: Store) -> list[tuple[object, ...]]:
    """What an enqueue leaves behind, without ids and wall-clock times (run_at: now)."""
    jobs = [
        (j.kind, j.ref, j.scheduled_for, j.max_attempts, j.state, j.attempts, j.payload)
        for j in store.list_jobs(limit=1000)
    ]
    runs = [(r["job_name"], r["scheduled_for"], r["outcome"]) for r in store.runs()]
    return sorted(jobs, key=repr) + sorted(runs, key=repr)


def cron_line(registry: Path, url: str, prefix: str, name: str = "nightly") -> list[str]:
    """The argument list `migrate --to enqueue` writes into the crontab (without argv[0])."""
    return Target("migrate-cron", str(registry), url, prefix).argv(name)[1:]


# --- the command line: which ones take the lean path ------------------------------------------


def test_the_line_migrate_writes_takes_the_lean_path(registry: Path) -> None:
    args = cron_line(registry, "postgresql://cron@db/queue", "mc_")
    got = parse(args, {})
    assert got is not None
    assert (got.name, got.slot, got.quiet) == ("nightly", "auto", True)
    assert (got.registry, got.database_url, got.table_prefix) == (
        str(registry),
        "postgresql://cron@db/queue",
        "mc_",
    )
    assert got.spool_dir is None
    # Without URL and prefix (read from cron's environment): resolved as Typer resolves them.
    bare = Target("migrate-cron", str(registry)).argv("nightly")[1:]
    env = {
        "MIGRATE_CRON_DATABASE_URL": "sqlite:///q.db",
        "MIGRATE_CRON_TABLE_PREFIX": "",  # empty: as if unset
        "MIGRATE_CRON_SPOOL": "/tmp/sp",
    }
    got = parse(bare, env)
    assert got is not None
    assert (got.database_url, got.table_prefix, got.spool_dir) == (
        "sqlite:///q.db",
        "",
        Path("/tmp/sp"),
    )
    got = parse(
        ["enqueue", "-q", "x", "-r", "r.toml", "--slot=2026-01-01T00:00", "--spool", "s"], {}
    )
    assert got is not None
    assert (got.name, got.registry, got.slot, got.spool_dir) == (
        "x",
        "r.toml",
        "2026-01-01T00:00",
        Path("s"),
    )
    assert parse(["enqueue", "x"], {}) == parse(["enqueue", "x"], {"MIGRATE_CRON_REGISTRY": ""})
    assert parse(["enqueue", "x"], {}).registry == "migrate-cron.toml"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["enqueue"],
        ["--debug", "enqueue", "x"],
        ["status"],
        ["enqueue", "--help"],
        ["enqueue", "x", "--help"],
        ["enqueue", "x", "--json"],
        ["enqueue", "x", "--ref", "1"],
        ["enqueue", "x", "--stdin"],
        ["enqueue", "x", "--payload", "{}"],
        ["enqueue", "x", "--run-at", "2026-01-01"],
        ["enqueue", "x", "--unknown"],
        ["enqueue", "x", "y"],
        ["enqueue", ""],
        ["enqueue", "x", "--slot"],
        ["enqueue", "x", "--slot", ""],
        ["enqueue", "x", "--slot", "--quiet"],
        ["enqueue", "x", "--registry", "a", "--registry", "b"],
        ["enqueue", "x", "-r=a"],
        ["enqueue", "x", "-rfile"],
        ["enqueue", "x", "-qr", "file"],
        ["enqueue", "x", "--quiet=1"],
        ["enqueue", "--", "x"],
    ],
)
def test_anything_else_goes_to_the_full_cli(argv: list[str]) -> None:
    assert parse(argv, {}) is None


def test_debug_goes_to_the_full_cli() -> None:
    assert parse(["enqueue", "x"], {"MIGRATE_CRON_DEBUG": "1"}) is None


# --- same output, same rows --------------------------------------------------------------------


def test_new_and_duplicate_slots_match_the_full_cli(
    db_url: str, table_prefix: str, registry: Path, store: Store, twin: Store, tmp_path: Path
) -> None:
    reg = str(registry)
    cases = [
        (cron_line(registry, db_url, "{prefix}"), ""),  # the cron line, quiet: a new slot
        (cron_line(registry, db_url, "{prefix}"), ""),  # the same slot from another host
        (["enqueue", "nightly", "--slot", "2026-03-29T03:00", "-r", reg], "enqueued\n"),
        (["enqueue", "nightly", "--slot", "2026-03-29T01:00:00Z", "-r", reg], "already enqueued\n"),
        (["enqueue", "every5", "--slot=2026-03-01T02:35", "--registry", reg], "enqueued\n"),
    ]
    for args, said in cases:
        outs = []
        for path, prefix in ((lean, table_prefix), (full, f"{table_prefix}f")):
            env = {
                "MIGRATE_CRON_DATABASE_URL": db_url,
                "MIGRATE_CRON_TABLE_PREFIX": prefix,
                "MIGRATE_CRON_SPOOL": str(tmp_path / "spool"),
            }
            outs.append(path(*[a.replace("{prefix}", prefix) for a in args], env=env))
        assert outs[0] == outs[1], args
        assert outs[0] == (0, said, ""), args
    assert rows(store) == rows(twin)
    assert len(store.list_jobs(kind="nightly")) == 2
    assert len(store.runs()) == 3


def test_unknown_job_and_missing_tables_match_the_full_cli(
    db_url: str, table_prefix: str, registry: Path, store: Store
) -> None:
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    unknown = cron_line(registry, db_url, table_prefix, name="nightlyy")
    got = lean(*unknown, env=env)
    assert got == full(*unknown, env=env)
    code, out, err = got
    assert (code, out) == (2, "")
    assert "no job 'nightlyy'" in err and "did you mean 'nightly'?" in err
    assert "Traceback" not in err
    no_tables = cron_line(registry, db_url, f"{table_prefix}none_")
    got = lean(*no_tables, env=env)
    assert got == full(*no_tables, env=env)
    assert got[0] == 1 and "db upgrade" in got[2]
    assert store.list_jobs() == []


def test_replayed_spool_matches_the_full_cli(
    db_url: str, table_prefix: str, registry: Path, store: Store, twin: Store, tmp_path: Path
) -> None:
    from datetime import UTC, datetime

    outs = []
    for path, prefix in ((lean, table_prefix), (full, f"{table_prefix}f")):
        spool = Spool(tmp_path / f"spool-{prefix}")
        target = target_of(mask_url(db_url), prefix)
        spool.put("every5", datetime(2026, 3, 1, 2, 30, tzinfo=UTC), 5, target, "test")
        args = ["enqueue", "every5", "--slot", "2026-03-01T02:35", "-r", str(registry)]
        args += [
            "--database-url",
            db_url,
            "--table-prefix",
            prefix,
            "--spool",
            str(spool.directory),
        ]
        outs.append(path(*args, env={}))
        assert spool.entries() == []
    assert outs[0] == outs[1]
    assert outs[0] == (0, "enqueued\n", "replayed 1 spooled slot(s) first\n")
    assert rows(store) == rows(twin)
    assert len(rows(store)) == 4  # two jobs, two slot rows


def test_unreachable_database_spools_and_exits_75_like_the_full_cli(
    registry: Path, tmp_path: Path
) -> None:
    spool_dir = tmp_path / "spool"
    url = "postgresql://cron:s3cret@127.0.0.1:9/queue"
    outs, bodies = [], []
    for path in (lean, full):
        outs.append(path(*cron_line(registry, url, ""), env={"MIGRATE_CRON_SPOOL": str(spool_dir)}))
        (spooled,) = spool_dir.glob("*.slot.json")
        body = json.loads(spooled.read_text())
        body.pop("spooled_at")
        bodies.append(body)
        spooled.unlink()
    assert outs[0] == outs[1]
    code, out, err = outs[0]
    assert (code, out) == (75, "")
    assert "cannot use the database" in err and "spooled to" in err and "s3cret" not in err
    assert len(err.splitlines()) == 1
    assert bodies[0] == bodies[1]
    assert bodies[0]["job"] == "nightly" and bodies[0]["max_attempts"] == 3


# --- what the lean path imports ----------------------------------------------------------------


def test_the_lean_path_imports_neither_typer_nor_rich(
    db_url: str, table_prefix: str, registry: Path, store: Store
) -> None:
    probe = (
        "import sys\n"
        "from migrate_cron.cli.main import main\n"
        "sys.argv = ['migrate-cron', *sys.argv[1:]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY[:3]!r} "
        f"or m in {HEAVY[3:]!r})\n"
        "print(code, heavy)\n"
    )
    code, out, err = run(
        [sys.executable, "-c", probe], *cron_line(registry, db_url, table_prefix), env={}
    )
    assert (code, out, err) == (0, "0 []\n", "")
    assert len(store.list_jobs(kind="nightly")) == 1
    # The same probe on a command line that is not the plain one: the full CLI, Typer and all.
    code, out, _ = run(
        [sys.executable, "-c", probe],
        *cron_line(registry, db_url, table_prefix),
        "--json",
        env={},
    )
    assert code == 0 and "'typer'" in out and "'rich'" in out


def test_the_installed_command_imports_neither_typer_nor_rich(
    db_url: str, table_prefix: str, registry: Path, store: Store
) -> None:
    """``python -X importtime`` on the installed script itself, the way cron starts it."""
    res = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            cli_path(),
            *cron_line(registry, db_url, table_prefix),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "MIGRATE_CRON_DEBUG"},
    )
    assert res.returncode == 0 and res.stdout == ""
    imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()}
    assert "migrate_cron.producer.enqueue" in imported  # the probe sees the imports at all
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY[:3] or m in HEAVY[3:])
    assert heavy == []


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_reader_gone_before_the_answer_exits_1_like_the_full_cli(
    db_url: str, table_prefix: str, registry: Path, store: Store
) -> None:
    """stdout's reader closed (``… | head -0``): Typer exits 1 without a traceback; so do we."""
    env = {**os.environ, "MIGRATE_CRON_DATABASE_URL": db_url}
    env["MIGRATE_CRON_TABLE_PREFIX"] = table_prefix
    env.pop("MIGRATE_CRON_DEBUG", None)
    results = []
    for cmd, slot in (([cli_path()], "2026-03-01T02:30"), (FULL_CLI, "2026-03-02T02:30")):
        args = ["enqueue", "nightly", "--slot", slot, "-r", str(registry)]
        proc = subprocess.Popen(
            [*cmd, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read()
        results.append((proc.wait(timeout=60), err))
    assert results[0] == results[1] == (1, "")
    assert len(store.list_jobs(kind="nightly")) == 2
