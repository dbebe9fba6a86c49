"""The Alembic revision for our tables, rendered from ``store/schema.py``.

``schema.py`` is the one definition of the tables; the revision is produced from it by Alembic's
own renderer, so the two cannot drift (a test compares a migrated database with the metadata).
The file is self-contained — it imports alembic and SQLAlchemy, never migrate_cron — so a
team's history keeps working wherever migrate-cron is not installed (the rendering:
``alembic_code.py``):

- TypeDecorators are written as their plain SQL type (``schema.TIMESTAMP_TYPE``: DATETIME(6)
  on MySQL/MariaDB, DATETIME2(6) on SQL Server), JSON as JSONB on PostgreSQL, via variants.
- The table prefix is baked into the table, index and constraint names.
- Indexes that exist only for some dialects (the claim index) become ``if`` blocks on
  ``op.get_context().dialect.name``, which also works offline (``--sql``).

The revision id is derived from the prefix and the step's schema version, so the same tables
get the same id everywhere (the repository's ``alembic/`` holds exactly these files for the
default prefix) and two prefixes can live in one history.

The schema grows by steps (``STEPS``), one revision each, never by editing a released one: an
existing install at step 1 gets step 2 from ``migrate-cron db upgrade``, or from running
``generate migration`` again, which writes only the steps its history lacks. A released step
renders the tables as they were when it was released (``build_tables(charset_everywhere=False)``
for steps 1–3), so its file stays byte for byte what installs already ran; step 4 then changes
the columns that differ, on MySQL/MariaDB only (``ALTER TABLE … MODIFY``, one statement per
table: one table rebuild, not one per column).
"""

from __future__ import annotations

import ast
import hashlib
import io
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.errors import ConfigError, UsageError
from migrate_cron.generate.alembic_code import (
    body,
    dialect_imports,
    render_conversions,
    render_indexes,
    render_ops,
    required_imports,
)
from migrate_cron.store.dialects import backend_names

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory
    from sqlalchemy import Column, Index, Table

    from migrate_cron.store.tables import Tables


@dataclass(frozen=True)
class Step:
    """One released revision: the tables it creates (dropped again by its downgrade), and the
    tables whose MySQL/MariaDB text columns it brings to ``utf8mb4`` (``converts``)."""

    version: int
    message: str
    tables: Callable[[Tables], list[Table]]
    #: Rendered from the tables as released before every text column stated its charset.
    before_utf8mb4: bool = False
    converts: Callable[[Tables], list[Table]] = lambda t: []
    #: Columns it adds to tables an earlier step created (nullable: old rows keep NULL).
    adds: Callable[[Tables], list[Column[Any]]] = lambda t: []
    #: Indexes it adds to tables an earlier step created.
    indexes: Callable[[Tables], list[Index]] = lambda t: []


def _named(table: Table, name: str) -> list[Index]:
    return [index for index in table.indexes if index.name == name]


def _all_tables(t: Tables) -> list[Table]:
    return [t.job, t.scheduled_runs, t.leases, t.side_effects, t.attempts]


#: Released steps, oldest first. Append a step for a schema change; never edit a released one.
STEPS = (
    Step(1, "create migrate-cron tables", lambda t: [t.job, t.scheduled_runs, t.leases], True),
    Step(2, "add migrate-cron side_effects ledger", lambda t: [t.side_effects], True),
    Step(3, "add migrate-cron job_attempts history", lambda t: [t.attempts], True),
    Step(4, "convert migrate-cron text columns to utf8mb4", lambda t: [], converts=_all_tables),
    Step(
        5,
        "add migrate-cron console tables",
        lambda t: [t.workers, t.actions, t.tallies, t.trend_periods],
        adds=lambda t: [t.attempts.c.ready_at],
    ),
    Step(
        6,
        "add migrate-cron job_attempts run-time index",
        lambda t: [],
        indexes=lambda t: _named(t.attempts, f"{t.prefix}job_attempts_done_idx"),
    ),
)
SCHEMA_VERSION = STEPS[-1].version
MESSAGE = STEPS[0].message
#: ``--dialect`` choices: every database of ``store.dialects.DIALECTS``, render-only included.
DIALECTS = tuple(backend_names())


ENV_DIR = Path(__file__).with_name("alembic_env")


@dataclass(frozen=True)
class Revision:
    """The parts of our revision for one prefix, ready for a ``script.py.mako`` template."""

    prefix: str
    rev_id: str
    message: str
    #: The previous step's revision (None for the first step, which joins the user's head).
    previous: str | None
    upgrades: str
    downgrades: str
    imports: str
    table_names: tuple[str, ...]


@dataclass(frozen=True)
class WrittenRevision:
    """Where ``write_revision`` put the file and how it hangs in the history."""

    path: Path
    rev_id: str
    down_revision: str | tuple[str, ...] | None
    branch_labels: tuple[str, ...]
    table_names: tuple[str, ...] = ()
    message: str = ""


def revision_id(prefix: str, version: int = SCHEMA_VERSION) -> str:
    """Stable id for (schema version, prefix): the same tables get the same id everywhere.
    Without ``version``: the head, the revision a fully upgraded database records."""
    return hashlib.sha1(f"migrate-cron:{version}:{prefix}".encode()).hexdigest()[:12]


def version_table(prefix: str) -> str:
    """Where ``migrate-cron db`` records its revision; never the user's ``alembic_version``."""
    return f"{prefix}migrate_cron_alembic_version"


def render_revision(prefix: str = "", version: int = 1) -> Revision:
    """Render one step's upgrade/downgrade code with ``prefix`` baked into every name."""
    from alembic.operations import ops
    from sqlalchemy.types import TypeDecorator

    from migrate_cron.config import validate_prefix
    from migrate_cron.store.schema import build_tables

    step = STEPS[version - 1]
    prefix = validate_prefix(prefix)
    tables = build_tables(prefix, charset_everywhere=not step.before_utf8mb4, step=step.version)
    ordered = step.tables(tables)
    added = step.adds(tables)
    for column in [c for table in ordered for c in table.c] + added:
        if isinstance(column.type, TypeDecorator):
            column.type = column.type.impl_instance  # the plain SQL type, no import of ours
    up: list[str] = []
    if ordered:
        up.append("# Tables and indexes rendered from migrate_cron/store/schema.py.")
    for table in ordered:
        up += render_ops([ops.CreateTableOp.from_table(table)])
        up += render_indexes(table)
    for column in added:
        up += render_ops(
            [ops.AddColumnOp.from_column_and_tablename(None, column.table.name, column)]
        )
    indexes = step.indexes(tables)
    for index in indexes:
        up += render_ops([ops.CreateIndexOp.from_index(index)])
    up += render_conversions(
        step.converts(build_tables(prefix, charset_everywhere=False, step=step.version)),
        step.converts(build_tables(prefix, step=step.version)),
    )
    down: list[str] = []
    for index in reversed(indexes):
        down += render_ops([ops.DropIndexOp.from_index(index)])
    for column in reversed(added):
        down += render_ops(
            [ops.DropColumnOp.from_column_and_tablename(None, column.table.name, column)]
        )
    for table in reversed(ordered):
        down += render_ops([ops.DropTableOp.from_table(table)])
    message = step.message if not prefix else f"{step.message} (prefix {prefix})"
    return Revision(
        prefix=prefix,
        rev_id=revision_id(prefix, step.version),
        message=message,
        previous=revision_id(prefix, step.version - 1) if step.version > 1 else None,
        upgrades=body(up),
        downgrades=body(down),
        imports=dialect_imports(),
        table_names=tuple(table.name for table in ordered),
    )


def render_revisions(prefix: str = "") -> tuple[Revision, ...]:
    """Every step, oldest first."""
    return tuple(render_revision(prefix, step.version) for step in STEPS)


def write_revisions(
    script: ScriptDirectory,
    prefix: str = "",
    head: str | None = None,
    branch_label: str | None = None,
) -> list[WrittenRevision]:
    """Write the steps ``script`` lacks, oldest first; each later step follows its predecessor.

    A history holding step 1 (an install from before step 2) gets only the new steps,
    appended to the head that descends from step 1 (or ``head``). A history that holds every
    step is refused, as writing the same revision twice always was.
    """
    revisions = render_revisions(prefix)
    missing = [r for r in revisions if not _has_revision(script, r.rev_id)]
    if not missing:
        _refuse_existing(script, revisions[-1])
    written: list[WrittenRevision] = []
    for revision in missing:
        if revision.previous is None:
            written.append(write_revision(script, revision, head=head, branch_label=branch_label))
        elif written:
            written.append(write_revision(script, revision, head=written[-1].rev_id))
        else:
            target = head or _head_after(script, revision.previous)
            written.append(write_revision(script, revision, head=target))
    return written


def _has_revision(script: ScriptDirectory, rev_id: str) -> bool:
    from alembic.util import CommandError

    try:
        return script.get_revision(rev_id) is not None
    except CommandError:
        return False


def _head_after(script: ScriptDirectory, rev_id: str) -> str:
    """The one head whose history holds ``rev_id`` (the user may have revisions after it)."""
    heads = [
        head
        for head in script.get_heads()
        if any(r.revision == rev_id for r in script.iterate_revisions(head, "base"))
    ]
    if len(heads) != 1:
        raise ConfigError(
            f"the Alembic history in {script.dir} has {len(heads)} heads after the migrate-cron "
            f"revision {rev_id}: pick one with --head REV"
        )
    return heads[0]


def write_revision(
    script: ScriptDirectory,
    revision: Revision,
    head: str | None = None,
    branch_label: str | None = None,
) -> WrittenRevision:
    """Write ``revision`` into ``script`` with its own template, config and post-write hooks.

    Appends to the single head by default (a separate branch makes ``alembic upgrade head``
    fail with "multiple heads"); ``branch_label`` starts an independent branch from base;
    ``head`` names the revision to append to when there are several heads.
    """
    from alembic.util import CommandError

    script.messaging_opts = {"quiet": True}  # our CLI prints the path itself
    _refuse_existing(script, revision)
    heads = script.get_heads()
    if branch_label:
        target, labels = "base", [branch_label]
    elif head:
        target, labels = head, None
    elif len(heads) > 1:
        raise ConfigError(
            f"the Alembic history in {script.dir} has {len(heads)} heads "
            f"({', '.join(sorted(heads))}): pick one with --head REV, "
            "or put our tables on their own branch with --branch-label NAME"
        )
    else:
        target, labels = "head", None
    try:
        written = script.generate_revision(
            revision.rev_id,
            revision.message,
            head=target,
            branch_labels=labels,
            upgrades=revision.upgrades,
            downgrades=revision.downgrades,
            imports=revision.imports,
        )
    except CommandError as exc:
        raise ConfigError(f"Alembic refused the revision: {exc}") from None
    if written is None:
        raise ConfigError(f"Alembic wrote no revision file into {script.dir}")
    path = Path(written.path)
    _ensure_imports(path)
    down = written.down_revision
    return WrittenRevision(
        path=path,
        rev_id=written.revision,
        down_revision=tuple(down) if isinstance(down, list | tuple) else down,
        branch_labels=tuple(sorted(written.branch_labels)),
        table_names=revision.table_names,
        message=revision.message,
    )


def _refuse_existing(script: ScriptDirectory, revision: Revision) -> None:
    from alembic.util import CommandError

    try:
        existing = script.get_revision(revision.rev_id)
    except CommandError:
        return
    if existing is not None:
        raise ConfigError(
            f"the migrate-cron revision {revision.rev_id} ({revision.message}) is already in "
            f"the history: {existing.path}; nothing to write — `alembic upgrade head` applies it"
        )


def _ensure_imports(path: Path) -> None:
    """Add the imports a user's own ``script.py.mako`` did not write (no ``${imports}``)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    bound: set[str] = set()
    last_import_line = 0
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            last_import_line = node.end_lineno or node.lineno
    missing = [stmt for name, stmt in required_imports().items() if name not in bound]
    if not missing:
        return
    lines = source.splitlines(keepends=True)
    if last_import_line == 0 and tree.body and isinstance(tree.body[0], ast.Expr):
        last_import_line = tree.body[0].end_lineno or 0  # after the docstring
    added = "".join(f"{stmt}\n" for stmt in missing)
    path.write_text(
        "".join(lines[:last_import_line]) + added + "".join(lines[last_import_line:]),
        encoding="utf-8",
    )


def revision_sources(prefix: str = "") -> dict[str, str]:
    """The files ``write_revisions`` produces with our template into an empty history, by
    file name, oldest step first."""
    from alembic.script import ScriptDirectory

    with tempfile.TemporaryDirectory(prefix="migrate-cron-rev-") as tmp:
        root = Path(tmp)
        (root / "versions").mkdir()
        (root / "script.py.mako").write_bytes((ENV_DIR / "script.py.mako").read_bytes())
        written = write_revisions(ScriptDirectory(str(root)), prefix)
        return {w.path.name: w.path.read_text(encoding="utf-8") for w in written}


def offline_sql(prefix: str, dialect: str) -> str:
    """The DDL of every step's ``upgrade()`` for one dialect, without a database.

    Runs the very files ``generate migration`` writes, in Alembic's offline (``as_sql``) mode.
    """
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    if dialect not in DIALECTS:
        raise UsageError(f"unknown dialect {dialect!r}: use one of {', '.join(DIALECTS)}")
    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name=dialect,
        opts={"as_sql": True, "output_buffer": buffer, "literal_binds": True},
    )
    for name, source in revision_sources(prefix).items():
        namespace: dict[str, Any] = {"__name__": "migrate_cron_revision"}
        exec(compile(source, f"<migrate-cron revision {name}>", "exec"), namespace)
        with Operations.context(context):
            namespace["upgrade"]()
    header = (
        f"-- migrate-cron tables, revision {revision_id(prefix)}, "
        f"table prefix {prefix!r}, dialect {dialect} (offline DDL)\n"
    )
    return header + buffer.getvalue()
