"""The rendered revision: deterministic, self-contained, identical to the shipped copies, and
written into Alembic histories the way Alembic itself would (no database needed here)."""

from __future__ import annotations

import ast
import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from migrate_cron.errors import ConfigError, UsageError
from migrate_cron.generate.revision import (
    ENV_DIR,
    STEPS,
    offline_sql,
    render_revision,
    render_revisions,
    revision_id,
    revision_sources,
    write_revision,
    write_revisions,
)

REPO = Path(__file__).resolve().parents[2]
REGENERATE = "regenerate both copies as described in alembic/README"


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.glob("*.py"))}


def test_repository_and_package_hold_the_revisions_schema_py_renders_today() -> None:
    rendered = revision_sources("")
    repo_files = _files(REPO / "alembic" / "versions")
    assert sorted(repo_files) == sorted(rendered), REGENERATE
    assert next(iter(rendered)) == f"{revision_id('', 1)}_create_migrate_cron_tables.py"
    for name, text in rendered.items():
        assert repo_files[name].decode("utf-8") == text, REGENERATE
    assert _files(ENV_DIR / "versions") == repo_files, REGENERATE


def test_the_released_first_revision_never_changes() -> None:
    """Installs recorded 69973539c494: its id and tables stay, later changes are new steps."""
    assert revision_id("", 1) == "69973539c494"
    first = render_revision("", 1)
    assert first.table_names == ("job", "scheduled_runs", "job_leases")
    assert "side_effects" not in first.upgrades
    ledger = render_revision("", 2)
    assert ledger.previous == first.rev_id
    assert ledger.table_names == ("side_effects",)
    history = render_revision("", 3)
    assert history.previous == ledger.rev_id
    assert history.table_names == ("job_attempts",)
    charset = render_revision("", 4)
    assert charset.previous == history.rev_id
    assert charset.table_names == ()
    console = render_revision("", 5)
    assert console.previous == charset.rev_id
    assert console.table_names == ("job_workers", "job_actions", "job_tallies", "job_trend_periods")
    assert "op.add_column('job_attempts'" in console.upgrades
    assert "op.drop_column('job_attempts', 'ready_at')" in console.downgrades
    run_times = render_revision("", 6)
    assert run_times.previous == console.rev_id
    assert run_times.table_names == ()
    assert run_times.upgrades == (
        "op.create_index('job_attempts_done_idx', 'job_attempts', "
        "['outcome', 'finished_at', 'kind', 'started_at'], unique=False)"
    )
    assert (
        run_times.downgrades == "op.drop_index('job_attempts_done_idx', table_name='job_attempts')"
    )
    assert revision_id("") == revision_id("", STEPS[-1].version) == run_times.rev_id


def test_released_revisions_keep_the_text_types_they_were_released_with() -> None:
    """Steps 1-3 render the tables as released (only key columns state utf8mb4), so the files
    installs ran never change; step 4 converts the rest on MySQL/MariaDB alone."""
    released = "".join(render_revision("", step).upgrades for step in (1, 2, 3))
    assert released.count("charset='utf8mb4'") == 2 * 6  # kind, ref, job_name, name, key, kind
    assert "sa.Column('output', sa.Text(), nullable=True)" in released
    assert "mysql_charset" not in released and "mariadb_charset" not in released
    convert = render_revision("", 4).upgrades
    assert "op.create_table" not in convert
    assert "if dialect == 'mysql':" in convert and "if dialect == 'mariadb':" in convert
    for column in ("state", "locked_by", "last_error", "output", "outcome", "holder", "status",
                   "worker", "error", "output_tail"):  # fmt: skip
        assert f"MODIFY {column} " in convert, column
    assert "MODIFY kind " not in convert and "MODIFY ref " not in convert  # already right
    assert convert.count("COLLATE utf8mb4_nopad_bin") == convert.count("COLLATE utf8mb4_bin")


@pytest.mark.parametrize("name", ["env.py", "script.py.mako"])
def test_repository_environment_is_the_packaged_one(name: str) -> None:
    assert (REPO / "alembic" / name).read_bytes() == (ENV_DIR / name).read_bytes()


def test_rendering_is_deterministic_and_prefix_specific() -> None:
    assert revision_sources("mc_") == revision_sources("mc_")
    assert revision_id("") != revision_id("mc_")
    assert len(revision_id("mc_")) == 12
    revision = render_revision("mc_")
    assert revision.table_names == ("mc_job", "mc_scheduled_runs", "mc_job_leases")
    for name in ("'mc_job'", "'mc_scheduled_runs'", "'mc_job_leases'", "'mc_job_claim_idx'"):
        assert name in revision.upgrades
    assert "'job'" not in revision.upgrades


@pytest.mark.parametrize("step", [step.version for step in STEPS])
def test_revision_imports_only_alembic_and_sqlalchemy(step: int) -> None:
    source = list(revision_sources("mc_").values())[step - 1]
    tree = ast.parse(source)
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
    assert modules == {"typing", "alembic", "sqlalchemy"}
    assert "migrate_cron." not in source  # no dotted reference either


def test_timestamps_are_plain_types_with_microsecond_variants() -> None:
    upgrades = render_revision("").upgrades
    assert "UTCDateTime" not in upgrades
    assert "mysql.DATETIME(fsp=6), 'mysql'" in upgrades
    assert "mysql.DATETIME(fsp=6), 'mariadb'" in upgrades
    assert "mssql.DATETIME2(precision=6), 'mssql'" in upgrades
    assert "postgresql.JSONB(astext_type=sa.Text())" in upgrades


def test_bad_prefix_and_unknown_dialect_are_refused() -> None:
    with pytest.raises(UsageError):
        render_revision("drop table;")
    with pytest.raises(UsageError, match="unknown dialect"):
        offline_sql("", "oracle")


def _history(tmp_path: Path, *revisions: tuple[str, str | None]) -> ScriptDirectory:
    """A script directory with our template and hand-written revisions (id, down_revision)."""
    (tmp_path / "versions").mkdir()
    shutil.copyfile(ENV_DIR / "script.py.mako", tmp_path / "script.py.mako")
    for rev, down in revisions:
        (tmp_path / "versions" / f"{rev}_user.py").write_text(
            f"revision = {rev!r}\ndown_revision = {down!r}\nbranch_labels = None\n"
            "depends_on = None\n\n\ndef upgrade():\n    pass\n\n\ndef downgrade():\n    pass\n"
        )
    return ScriptDirectory(str(tmp_path))


def test_appends_to_the_single_head(tmp_path: Path) -> None:
    script = _history(tmp_path, ("u1", None), ("u2", "u1"))
    written = write_revision(script, render_revision("mc_"))
    assert written.down_revision == "u2"
    assert ScriptDirectory(str(tmp_path)).get_heads() == [written.rev_id]


def test_several_heads_need_a_choice(tmp_path: Path) -> None:
    script = _history(tmp_path, ("u1", None), ("a2", "u1"), ("b2", "u1"))
    with pytest.raises(ConfigError, match=r"2 heads.*--head REV.*--branch-label"):
        write_revision(script, render_revision("mc_"))
    written = write_revision(script, render_revision("mc_"), head="b2")
    assert written.down_revision == "b2"
    assert sorted(ScriptDirectory(str(tmp_path)).get_heads()) == sorted(["a2", written.rev_id])


def test_branch_label_starts_an_independent_branch(tmp_path: Path) -> None:
    script = _history(tmp_path, ("u1", None))
    written = write_revision(script, render_revision("mc_"), branch_label="queue")
    assert written.down_revision is None
    assert written.branch_labels == ("queue",)
    assert ScriptDirectory(str(tmp_path)).get_revision("queue@head").revision == written.rev_id


def test_the_same_revision_twice_is_refused(tmp_path: Path) -> None:
    script = _history(tmp_path, ("u1", None))
    write_revision(script, render_revision("mc_"))
    with pytest.raises(ConfigError, match="already in the history"):
        write_revision(ScriptDirectory(str(tmp_path)), render_revision("mc_"))


def test_all_steps_go_in_a_row_onto_the_single_head(tmp_path: Path) -> None:
    script = _history(tmp_path, ("u1", None))
    written = write_revisions(script, "mc_")
    assert [w.rev_id for w in written] == [r.rev_id for r in render_revisions("mc_")]
    assert written[0].down_revision == "u1"
    assert written[1].down_revision == written[0].rev_id
    assert ScriptDirectory(str(tmp_path)).get_heads() == [revision_id("mc_")]
    with pytest.raises(ConfigError, match="already in the history"):
        write_revisions(ScriptDirectory(str(tmp_path)), "mc_")


def test_an_older_install_gets_only_the_new_step_after_its_own_head(tmp_path: Path) -> None:
    """Step 1 written by an older release, then a revision of the user's: the later steps go
    on top, in order."""
    script = _history(tmp_path, ("u1", None))
    first = write_revision(script, render_revision("mc_"))
    user = tmp_path / "versions" / "u3_user.py"
    user.write_text(
        f"revision = 'u3'\ndown_revision = {first.rev_id!r}\nbranch_labels = None\n"
        "depends_on = None\n\n\ndef upgrade():\n    pass\n\n\ndef downgrade():\n    pass\n"
    )
    written = write_revisions(ScriptDirectory(str(tmp_path)), "mc_")
    ledger, history, charset, console = (revision_id("mc_", n) for n in (2, 3, 4, 5))
    assert [(w.rev_id, w.down_revision) for w in written] == [
        (ledger, "u3"),
        (history, ledger),
        (charset, history),
        (console, charset),
        (revision_id("mc_"), console),
    ]
    assert [w.table_names for w in written] == [
        ("mc_side_effects",),
        ("mc_job_attempts",),
        (),
        ("mc_job_workers", "mc_job_actions", "mc_job_tallies", "mc_job_trend_periods"),
        (),
    ]


def _run_offline_upgrade(path: Path, dialect: str) -> str:
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name=dialect, opts={"as_sql": True, "output_buffer": buffer}
    )
    with Operations.context(context):
        namespace["upgrade"]()
    return buffer.getvalue()


def test_a_template_without_imports_still_gets_a_working_file(tmp_path: Path) -> None:
    script = _history(tmp_path, ("u1", None))
    template = (tmp_path / "script.py.mako").read_text()
    stripped = template.replace('${imports if imports else ""}\n', "")
    stripped = stripped.replace("import sqlalchemy as sa\n", "")
    assert "imports" not in stripped
    (tmp_path / "script.py.mako").write_text(stripped)
    written = write_revision(script, render_revision("mc_"))
    ddl = _run_offline_upgrade(written.path, "mysql")
    assert "CREATE TABLE mc_job" in ddl
    assert "DATETIME(6)" in ddl
