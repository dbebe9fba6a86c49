"""``migrate-cron generate …``: files for the user's project. The Alembic revisions are
written here; the registry from crontabs by ``generate_registry``."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import (
    JsonFlag,
    RegistryPath,
    TablePrefix,
    info,
    print_json,
)
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.store.dialects import backend_names

if TYPE_CHECKING:
    from migrate_cron.generate.revision import WrittenRevision

generate_app = typer.Typer(
    help=(
        "Write files for your project: the job registry (migrate-cron.toml) from crontabs, "
        "and an Alembic revision for the migrate-cron tables."
    ),
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    from migrate_cron.cli.generate_registry import generate_registry

    generate_app.command("registry")(generate_registry)
    app.add_typer(generate_app, name="generate")


#: ``--dialect`` choices: the databases of ``store.dialects.DIALECTS``.
Dialect = StrEnum("Dialect", [(name, name) for name in backend_names()])  # type: ignore[misc]


ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="Your alembic.ini. Default: ./alembic.ini, or \\[tool.alembic] in ./pyproject.toml.",
        show_default=False,
    ),
]
Directory = Annotated[
    Path | None,
    typer.Option(
        "--directory",
        "-d",
        help="Your Alembic script directory (holding env.py), instead of --config.",
        show_default=False,
    ),
]
InitDir = Annotated[
    Path | None,
    typer.Option(
        "--init",
        metavar="DIR",
        help="No Alembic yet? Create a working environment in DIR (and alembic.ini) first.",
        show_default=False,
    ),
]
Head = Annotated[
    str | None,
    typer.Option("--head", help="Append to this revision when your history has several heads."),
]
BranchLabel = Annotated[
    str | None,
    typer.Option(
        "--branch-label",
        help="Start an independent branch with this label (you then `alembic upgrade heads`).",
    ),
]
Sql = Annotated[
    bool,
    typer.Option("--sql", help="Print the DDL for --dialect instead of writing a file (offline)."),
]
DialectOption = Annotated[
    Dialect | None,
    typer.Option("--dialect", help="The database for --sql.", case_sensitive=False),
]


@generate_app.command("migration")
def migration(
    table_prefix: TablePrefix = "",
    config: ConfigFile = None,
    directory: Directory = None,
    init: InitDir = None,
    head: Head = None,
    branch_label: BranchLabel = None,
    sql: Sql = False,
    dialect: DialectOption = None,
    claim_table: Annotated[
        str | None,
        typer.Option(
            "--claim-table",
            metavar="NAME",
            help="Instead: add the columns and indexes `worker --table NAME` needs to your own "
            "table, described by \\[tables.NAME] in the registry (existing columns untouched).",
            show_default=False,
        ),
    ] = None,
    registry: RegistryPath = DEFAULT_REGISTRY,
    as_json: JsonFlag = False,
) -> None:
    """Add the Alembic revisions creating the migrate-cron tables to your Alembic history.

    They are appended to your single head: `alembic upgrade head` creates the tables. Run it
    again after upgrading migrate-cron: it writes only the revisions your history lacks (e.g.
    the side_effects ledger of `once`), after the head that holds the older ones.

    With --claim-table NAME it writes one revision that adds locked_by, locked_until,
    attempts and last_error and the claim/reap indexes to your table \\[tables.NAME] (partial
    on PostgreSQL, composite elsewhere); its downgrade drops exactly those.

    The file imports only alembic and SQLAlchemy.
    """
    from migrate_cron.config import validate_prefix
    from migrate_cron.errors import UsageError

    prefix = validate_prefix(table_prefix)
    if sql or dialect is not None:
        if not (sql and dialect is not None):
            raise UsageError("--sql and --dialect go together: --sql --dialect postgresql")
        if claim_table is not None:
            from migrate_cron.generate.claim_table import claim_offline_sql
            from migrate_cron.registry import load_registry

            spec = load_registry(registry).table(claim_table)
            sys.stdout.write(claim_offline_sql(spec, dialect.value))
            return
        _print_sql(prefix, dialect.value)
        return
    if init is not None and directory is not None:
        raise UsageError("--init creates the directory: leave out --directory")
    if head and branch_label:
        raise UsageError("--head appends to a revision, --branch-label starts a branch: pick one")
    if claim_table is not None:
        if init is not None:
            raise UsageError(
                "--claim-table adds columns to a table your own Alembic history creates: "
                "point --config or --directory at it instead of --init"
            )
        _write_claim(claim_table, registry, config, directory, head, branch_label, as_json)
        return
    _write(prefix, config, directory, init, head, branch_label, as_json)


def _write_claim(
    name: str,
    registry: str,
    config: Path | None,
    directory: Path | None,
    head: str | None,
    branch_label: str | None,
    as_json: bool,
) -> None:
    from migrate_cron.generate.claim_table import write_claim_revision
    from migrate_cron.generate.project import find_script_directory
    from migrate_cron.registry import load_registry
    from migrate_cron.store.rows import CLAIM_COLUMNS, index_names

    spec = load_registry(registry).table(name)
    script = find_script_directory(Path.cwd(), config, directory)
    written = write_claim_revision(script, spec, head=head, branch_label=branch_label)
    if as_json:
        print_json(
            {
                "path": str(written.path),
                "revision": written.rev_id,
                "down_revision": written.down_revision,
                "branch_labels": list(written.branch_labels),
                "table": spec.table,
                "columns": list(CLAIM_COLUMNS),
                "indexes": list(index_names(spec)),
            }
        )
    else:
        typer.echo(str(written.path))
    info(
        f"wrote revision {written.rev_id} (revises {written.down_revision or 'base'}): "
        f"{', '.join(CLAIM_COLUMNS)} and indexes {', '.join(index_names(spec))} on "
        f"{spec.table}"
    )
    info(f"next: `alembic upgrade head`, then `migrate-cron worker --table {spec.name}`")


def _print_sql(prefix: str, dialect: str) -> None:
    from migrate_cron.generate.revision import offline_sql

    sys.stdout.write(offline_sql(prefix, dialect))


def _write(
    prefix: str,
    config: Path | None,
    directory: Path | None,
    init: Path | None,
    head: str | None,
    branch_label: str | None,
    as_json: bool,
) -> None:
    from alembic.script import ScriptDirectory

    from migrate_cron.generate.env_snippet import include_object_snippet
    from migrate_cron.generate.project import find_script_directory, init_project
    from migrate_cron.generate.revision import write_revisions

    cwd = Path.cwd()
    if init is not None:
        ini = init_project(cwd, init, config, prefix)
        info(f"created an Alembic environment in {cwd / init} and {ini}")
        script = ScriptDirectory(str(cwd / init), messaging_opts={"quiet": True})
    else:
        script = find_script_directory(cwd, config, directory)
    written = write_revisions(script, prefix, head=head, branch_label=branch_label)
    snippet = include_object_snippet(prefix)
    if as_json:
        first = written[0]
        print_json(
            {
                "path": str(first.path),
                "revision": first.rev_id,
                "down_revision": first.down_revision,
                "branch_labels": list(first.branch_labels),
                "head": written[-1].rev_id,
                "revisions": [_written_json(w) for w in written],
                "table_prefix": prefix,
                "tables": [name for w in written for name in w.table_names],
                "include_object": snippet,
            }
        )
    else:
        for one in written:
            typer.echo(str(one.path))
    for one in written:
        revises = one.down_revision or "base"
        what = ", ".join(one.table_names) or one.message
        info(f"wrote revision {one.rev_id} (revises {revises}): {what}")
    if branch_label:
        info(f"it starts branch {branch_label!r}: run `alembic upgrade heads` (note the s)")
    elif init is not None:
        _next_after_init(prefix)
    else:
        info("next: `alembic upgrade head`")
    if init is None and not as_json:
        # Plain write, not rich: the snippet must survive copy-paste unwrapped.
        sys.stderr.write(
            "\nPaste this into your env.py so autogenerate never proposes to drop these "
            f"tables:\n\n{snippet}"
        )


def _next_after_init(prefix: str) -> None:
    """The next step for a project ``--init`` made: its env.py connects to
    MIGRATE_CRON_DATABASE_URL (else the default SQLite file), so say which database that is,
    and never advise an upgrade that would fail because the tables are already there."""
    import os

    from migrate_cron.config import DATABASE_URL_ENV
    from migrate_cron.generate.environment import init_conflict
    from migrate_cron.store.dialects import DEFAULT_DATABASE_URL
    from migrate_cron.store.engine import display_url

    url = os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL
    conflict = init_conflict(url, prefix)
    if conflict is not None:
        info(f"next: not `alembic upgrade head`: {conflict}")
        return
    source = DATABASE_URL_ENV if os.environ.get(DATABASE_URL_ENV) else "the default"
    info(
        f"next: `alembic upgrade head` — it creates the tables in {display_url(url)} "
        f"({source}; set {DATABASE_URL_ENV} or sqlalchemy.url in alembic.ini for another)"
    )


def _written_json(written: WrittenRevision) -> dict[str, object]:
    return {
        "path": str(written.path),
        "revision": written.rev_id,
        "down_revision": written.down_revision,
        "tables": list(written.table_names),
    }
