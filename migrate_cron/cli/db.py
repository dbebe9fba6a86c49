"""``migrate-cron db upgrade|downgrade|current``: our tables in the configured database.

Runs the packaged Alembic revision programmatically (no alembic.ini), recording it in
``{prefix}migrate_cron_alembic_version`` so the user's own ``alembic_version`` is untouched.
Tables the user's own Alembic project created (``generate migration``) are recognised and
left to that project: ``db current`` says so, ``db upgrade``/``downgrade`` refuse in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import (
    DEFAULT_URL,
    DatabaseUrl,
    JsonFlag,
    TablePrefix,
    info,
    print_json,
)

if TYPE_CHECKING:
    from migrate_cron.generate.environment import SchemaState

db_app = typer.Typer(
    help="Create, drop and inspect the migrate-cron tables (Alembic, no alembic.ini needed).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")


@db_app.command("upgrade")
def upgrade(
    revision: Annotated[
        str, typer.Argument(help="Target revision; `head` is the latest.")
    ] = "head",
    database_url: DatabaseUrl = DEFAULT_URL,
    table_prefix: TablePrefix = "",
    as_json: JsonFlag = False,
) -> None:
    """Create or update the tables (job, scheduled_runs, job_leases, side_effects, job_attempts)."""
    from migrate_cron.generate import environment

    before, after = environment.upgrade(database_url, table_prefix, revision)
    _report("upgrade", before, after, as_json)


@db_app.command("downgrade")
def downgrade(
    revision: Annotated[
        str, typer.Argument(help="Target revision; `-1` is one step back, `base` drops all.")
    ] = "-1",
    database_url: DatabaseUrl = DEFAULT_URL,
    table_prefix: TablePrefix = "",
    as_json: JsonFlag = False,
) -> None:
    """Undo revisions; at `base` the tables and their rows are gone."""
    from migrate_cron.generate import environment

    before, after = environment.downgrade(database_url, table_prefix, revision)
    _report("downgrade", before, after, as_json)


@db_app.command("current")
def current(
    database_url: DatabaseUrl = DEFAULT_URL,
    table_prefix: TablePrefix = "",
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 unless the database is at the latest revision.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """The revision the database is at (stdout), and whether that is the latest."""
    from migrate_cron.generate import environment

    state = environment.current(database_url, table_prefix)
    if as_json:
        print_json(_state_json(state))
    else:
        for rev in state.at:
            typer.echo(f"{rev} (head)" if rev in state.heads else rev)
        info(f"{state.database}: {_describe(state, table_prefix)}")
    if check and not state.up_to_date:
        raise typer.Exit(1)


def _describe(state: SchemaState, prefix: str) -> str:
    from migrate_cron.generate.environment import elsewhere_note
    from migrate_cron.generate.project_here import own_project_revisions

    versions = None if state.current or state.found else own_project_revisions(prefix)
    if versions is not None:  # `db upgrade` here would make the project's upgrade fail
        return (
            f"no tables yet — the Alembic project here has migrate-cron's revisions "
            f"({versions}): run `alembic upgrade head` (README, Two ways to the tables)"
        )
    if not state.exists:
        return "no database yet — run `migrate-cron db upgrade` (it creates the file)"
    if state.managed_elsewhere:
        return elsewhere_note(state)
    if state.up_to_date:
        return "up to date"
    if not state.current:
        return "no tables yet — run `migrate-cron db upgrade`"
    return f"behind {', '.join(state.heads)} — run `migrate-cron db upgrade`"


def _report(action: str, before: SchemaState, after: SchemaState, as_json: bool) -> None:
    if as_json:
        print_json({"action": action, "before": list(before.current), **_state_json(after)})
        return
    was = ", ".join(before.current) or "base"
    now = ", ".join(after.current) or "base"
    if after.managed_elsewhere:  # `upgrade` at the head of the user's own history
        from migrate_cron.generate.environment import elsewhere_note

        info(f"{after.database}: nothing to {action}: {elsewhere_note(after)}")
    elif before.current == after.current:
        info(f"{after.database}: already at {now}, nothing to {action}")
    elif not after.current:
        info(f"{after.database}: {action}d {was} -> base; the tables are dropped")
    else:
        info(f"{after.database}: {action}d {was} -> {now} (recorded in {after.version_table})")


def _state_json(state: SchemaState) -> dict[str, object]:
    return {
        "database": state.database,
        "table_prefix": state.table_prefix,
        "version_table": state.version_table,
        "current": list(state.current),
        "heads": list(state.heads),
        "up_to_date": state.up_to_date,
        "tables_at": list(state.at),
        "managed_by": state.managed_by,
        "alembic_version_tables": list(state.histories),
    }
