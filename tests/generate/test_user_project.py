"""``generate migration`` into a user's real Alembic project, then the real ``alembic``
command applies and reverts it on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from migrate_cron.generate.revision import STEPS, revision_id
from migrate_cron.store.dialects import normalize_url
from tests.conftest import run_cli
from tests.generate.live_schema import tables_with_prefix

ALEMBIC = str(Path(sys.executable).with_name("alembic"))
REPO = Path(__file__).resolve().parents[2]
USER_REVISION = '''"""create users"""
from alembic import op
import sqlalchemy as sa

revision = "u0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "{prefix}users",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(100)),
    )


def downgrade():
    op.drop_table("{prefix}users")
'''
USER_METADATA = """
import sqlalchemy as sa
target_metadata = sa.MetaData()
sa.Table(
    "{prefix}users",
    target_metadata,
    sa.Column("id", sa.Integer(), primary_key=True),
    sa.Column("name", sa.String(100)),
)
"""


def alembic(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [ALEMBIC, *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args}: {result.stdout}\n{result.stderr}"
    return result.stdout


def user_project(root: Path, url: str, prefix: str) -> Path:
    """An existing project: `alembic init` plus one revision of the user's own. Its version
    table carries the test's prefix, because the server database is shared per session."""
    ok(alembic(root, "init", "migrations"))
    ini = root / "alembic.ini"
    ini.write_text(
        ini.read_text().replace(
            "sqlalchemy.url = driver://user:pass@localhost/dbname",
            f"sqlalchemy.url = {normalize_url(url)}",
        )
    )
    env = root / "migrations" / "env.py"
    env.write_text(
        env.read_text().replace(
            "context.configure(", f"context.configure(version_table='{prefix}alembic_version', "
        )
    )
    (root / "migrations" / "versions" / "u0001_users.py").write_text(
        USER_REVISION.replace("{prefix}", prefix)
    )
    return root


def drop_leftovers(url: str, prefix: str) -> None:
    """Clean the shared server database even when an assertion failed half-way."""
    engine = create_engine(normalize_url(url))
    try:
        with engine.begin() as conn:
            for name in tables_with_prefix(url, prefix):
                conn.execute(text(f"DROP TABLE {name}"))
    finally:
        engine.dispose()


def test_generated_revision_joins_the_history_and_applies_and_reverts(
    db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    project = user_project(tmp_path, db_url, table_prefix)
    try:
        result = run_cli("generate", "migration", "--table-prefix", table_prefix, cwd=project)
        assert result.returncode == 0, result.stderr
        written = [Path(line) for line in result.stdout.splitlines()]
        assert [p.parent for p in written] == [project / "migrations" / "versions"] * len(STEPS)
        assert "include_object" in result.stderr

        heads = ok(alembic(project, "heads")).split()
        assert heads == [revision_id(table_prefix), "(head)"]
        assert "u0001 ->" in ok(alembic(project, "history"))

        ok(alembic(project, "upgrade", "head"))
        ours = {
            f"{table_prefix}{n}"
            for n in (
                "job",
                "scheduled_runs",
                "job_leases",
                "side_effects",
                "job_attempts",
                "job_workers",
                "job_actions",
                "job_tallies",
                "job_trend_periods",
            )
        }
        assert tables_with_prefix(db_url, table_prefix) == {
            *ours,
            f"{table_prefix}users",
            f"{table_prefix}alembic_version",
        }

        ok(alembic(project, "downgrade", "base"))
        assert tables_with_prefix(db_url, table_prefix) == {f"{table_prefix}alembic_version"}
    finally:
        drop_leftovers(db_url, table_prefix)


def test_init_creates_a_working_environment_holding_the_repository_revision(
    tmp_path: Path,
) -> None:
    result = run_cli("generate", "migration", "--init", "migrations", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = [Path(line) for line in result.stdout.splitlines()]
    assert len(written) == len(STEPS)
    for path in written:
        assert path.read_bytes() == (REPO / "alembic" / "versions" / path.name).read_bytes()
    assert (tmp_path / "alembic.ini").is_file()

    url = f"sqlite:///{tmp_path / 'app.db'}"
    ok(alembic(tmp_path, "-x", f"database_url={url}", "upgrade", "head"))
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
        "alembic_version",
    }
    offline = ok(
        alembic(tmp_path, "-x", "database_url=postgresql://x/y", "upgrade", "head", "--sql")
    )
    assert "CREATE INDEX job_claim_idx ON job (run_at, id) WHERE state = 'open'" in offline
    ok(alembic(tmp_path, "-x", f"database_url={url}", "downgrade", "base"))
    assert tables_with_prefix(url, "") == {"alembic_version"}

    again = run_cli("generate", "migration", "--init", "migrations", cwd=tmp_path)
    assert again.returncode == 1
    assert "already exists" in " ".join(again.stderr.split())


def test_include_object_snippet_keeps_autogenerate_clean(tmp_path: Path) -> None:
    """Without the snippet `alembic check` wants to drop our tables; with it, nothing to do."""
    prefix = "mc_"
    url = f"sqlite:///{tmp_path / 'app.db'}"
    project = user_project(tmp_path, url, prefix)
    env = project / "migrations" / "env.py"
    env.write_text(
        env.read_text().replace("target_metadata = None", USER_METADATA.replace("{prefix}", prefix))
    )
    result = run_cli("generate", "migration", "--table-prefix", prefix, cwd=project)
    assert result.returncode == 0, result.stderr
    ok(alembic(project, "upgrade", "head"))

    before = alembic(project, "check")
    assert before.returncode != 0
    assert "remove_table" in before.stderr + before.stdout

    snippet = result.stderr.split("tables:\n\n", 1)[1]
    source = env.read_text()
    source = source.replace(
        "context.configure(", "context.configure(include_object=include_object, "
    )
    source = source.replace(
        "target_metadata = sa.MetaData()", snippet + "\ntarget_metadata = sa.MetaData()"
    )
    env.write_text(source)
    after = alembic(project, "check")
    assert after.returncode == 0, after.stderr
    assert "No new upgrade operations detected" in after.stdout + after.stderr


def test_without_an_alembic_project_it_points_to_init(tmp_path: Path) -> None:
    result = run_cli("generate", "migration", cwd=tmp_path)
    assert result.returncode == 1
    assert "--init DIR" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flags", [("--head", "b2"), ("--branch-label", "queue")])
def test_several_heads_are_refused_unless_told_where(
    tmp_path: Path, flags: tuple[str, str]
) -> None:
    ok(alembic(tmp_path, "init", "migrations"))
    versions = tmp_path / "migrations" / "versions"
    for rev, down in (("u1", None), ("a2", "u1"), ("b2", "u1")):
        (versions / f"{rev}.py").write_text(
            f"revision = {rev!r}\ndown_revision = {down!r}\nbranch_labels = None\n"
            "depends_on = None\ndef upgrade(): pass\ndef downgrade(): pass\n"
        )
    refused = run_cli("generate", "migration", cwd=tmp_path)
    assert refused.returncode == 1
    message = " ".join(refused.stderr.split())
    assert "--head REV" in message and "--branch-label" in message
    accepted = run_cli("generate", "migration", *flags, "--json", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    heads = ok(alembic(tmp_path, "heads"))
    assert revision_id("") in heads
    assert len(heads.strip().splitlines()) == (2 if flags[0] == "--head" else 3)
