"""``migrate-cron generate …``: files for the user's project (the Alembic revision here)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import (
    CronChoice,
    CronOption,
    JsonFlag,
    RegistryPath,
    TablePrefix,
    TzOption,
    info,
    print_json,
    reflow,
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

    from migrate_cron.generate.project import find_script_directory, init_project
    from migrate_cron.generate.revision import include_object_snippet, write_revisions

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


def generate_registry(
    crontabs: Annotated[
        list[str],
        typer.Argument(
            help="Crontab files (user or system format), or HOST:PATH for a copy of HOST's "
            "crontab: the same line on several hosts becomes one job with every origin.",
            show_default=False,
            metavar="CRONTAB...",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--registry",
            "-r",
            "--output",
            "-o",
            envvar="MIGRATE_CRON_REGISTRY",
            help="The registry file (written here; every other command reads it with -r).",
        ),
    ] = Path(DEFAULT_REGISTRY),
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Take lines edited since the last run (names are kept), and register lines "
            "that never worked (analyze reports an error) with the error as their comment.",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the registry diff; write nothing.")
    ] = False,
    tz: TzOption = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            help="Whose crontab the user-format files are (as `crontab -l -u NAME`): their "
            "jobs run as NAME. System files (/etc/crontab, cron.d) name the user on each "
            "line; a file under /var/spool/cron/crontabs/ is its owner's.",
            metavar="NAME",
        ),
    ] = None,
    file_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="user | system | auto: how to read the files (auto: from their place — "
            "cron.d and /etc/crontab are system, cron's spool is user — else from their lines).",
            metavar="FORMAT",
        ),
    ] = "auto",
    cron: CronOption = CronChoice.debian,
    as_json: JsonFlag = False,
) -> None:
    """One registry entry per crontab line, merged into migrate-cron.toml.

    Each entry gets a readable unique name (kept on every re-run), the schedule, the zone cron
    scheduled it in, the command, shell, env lines, %-stdin, the directory cron ran it in
    (HOME= above the line, else its user's home), a suggested missed-run policy, mode = "cron"
    and the line itself (for rollback). Existing entries are never overwritten without
    --force, and names never change.

    Nothing changes when or how a job runs without a word on stderr. A line that never worked
    (analyze reports an error on it: cut at %, bash syntax under /bin/sh, a whole file cron
    ignores, ...) is not registered: one line "FILE:LINE: not registered: why" each, unless
    --force. Under --cron debian or busybox a CRON_TZ line is refused until --tz names the zone
    cron runs in (they ignore CRON_TZ); under cronie its zone is the entry's. The zone each job
    got, and why, is said on stderr. Without --format a file away from cron's directories is a
    system crontab when its lines read as "schedule USER command".

    Exit 1 when a line was refused, rejected by cron or changed since the last run (the
    others are written).
    """
    import difflib
    import sys

    from rich.markup import escape

    from migrate_cron.migration.generation import generate_registry as generate
    from migrate_cron.registry.proposal import CHANGED, GONE, NEW, REFUSED, UPDATED

    if tz is not None:
        from migrate_cron.crontab.timezone import check_zone

        check_zone(tz)
    if file_format not in ("auto", "user", "system"):
        from migrate_cron.errors import UsageError

        raise UsageError(f"--format must be user, system or auto, not {file_format!r}")
    result = generate(
        crontabs, output, force=force, dry_run=dry_run, timezone=tz, user=user,
        file_format=file_format, cron=cron.value,
    )  # fmt: skip
    if as_json:
        from dataclasses import asdict

        from migrate_cron.cli.common import print_json

        print_json(
            {
                "registry": result.registry,
                "written": result.written,
                "jobs": [asdict(a) for a in result.actions],
                "skipped": [asdict(s) for s in result.skipped],
                "timezones": [
                    {"zone": z.zone, "reason": z.reason, "lines": list(z.lines)}
                    for z in result.zones
                ],
                "notices": list(result.notices),
            }
        )
    elif dry_run:
        sys.stdout.writelines(
            difflib.unified_diff(
                result.before.splitlines(keepends=True),
                result.after.splitlines(keepends=True),
                f"{output} (before)",
                f"{output} (after)",
            )
        )
    else:
        typer.echo(str(output))

    from migrate_cron.cli.common import stderr_console
    from migrate_cron.cli.render.escape import printable
    from migrate_cron.cli.render.numbers import counted, plural

    console = stderr_console()  # one for every line: a console each costs 100,000 of them

    def say(message: str) -> None:
        console.print(message, highlight=False)

    def shown(text: object) -> str:
        """A name, path or line of the crontab as it is, never markup or terminal codes."""
        return escape(printable(str(text)))

    colors = {NEW: "green", CHANGED: "red", UPDATED: "yellow", GONE: "yellow"}
    for a in result.actions:
        if a.status == REFUSED:
            continue  # below, one plain line each
        color = colors.get(a.status)
        status = f"[{color}]{a.status:8}[/{color}]" if color else f"{a.status:8}"
        detail = f"  {shown(a.detail)}" if a.detail else ""
        say(f"{status} {shown(f'{a.name:24}')} {shown(a.file)}:{a.line}{detail}")
        if a.status in (CHANGED, UPDATED):
            say(
                f"           registry: {shown(a.old_text)}\n           file:     "
                f"{shown(a.new_text)}"
            )
    for s in result.skipped:
        say(f"skipped  {shown(s.file)}:{s.line}  {shown(s.reason)}")
    for z in result.zones:
        where = ", ".join(z.lines[:3]) + (
            f" and {len(z.lines) - 3} more" if len(z.lines) > 3 else ""
        )
        say(shown(f"timezone {z.zone} for {counted(len(z.lines), 'job')} ({where}): {z.reason}"))
    for notice in result.notices:
        say(f"[yellow]warning[/yellow] {shown(notice)}")
    # Plain writes: one line each whatever the terminal, greppable, never read as markup.
    sys.stderr.writelines(
        f"{printable(a.file)}:{a.line}: not registered: {printable(a.detail)}\n"
        for a in result.refused
    )
    counts = {k: len({a.name for a in result.actions if a.status == k}) for k in (NEW, CHANGED)}
    if dry_run:
        say("dry run: nothing written")
    elif result.written:
        say(
            f"wrote {shown(output)}: {counted(counts[NEW], 'new job')}; check the names and "
            "policies, then `migrate-cron plan` and `migrate-cron migrate NAME`"
        )
    else:
        say(f"{shown(output)} is up to date")
    if result.refused:
        say(
            f"[red]{counted(len(result.refused), 'line')} not registered[/red] (above): fix "
            f"{plural(len(result.refused), 'it', 'them')} and re-run, or register "
            f"{plural(len(result.refused), 'it', 'them')} anyway as each line says"
        )
    rejected = [s for s in result.skipped if s.reason.startswith("cron rejects")]
    if result.refused and not rejected and not result.conflicts:
        raise typer.Exit(1)
    if rejected and not result.conflicts:
        n = len(rejected)
        say(
            f"[red]{counted(n, 'line')} {plural(n, 'is', 'are')} not valid crontab syntax and "
            f"{plural(n, 'was', 'were')} not taken[/red]: fix "
            f"{plural(n, 'it', 'them')} (see `migrate-cron analyze`) and re-run"
        )
        raise typer.Exit(1)
    if result.conflicts:
        n = len(result.conflicts)
        say(
            f"[red]{counted(n, 'line')} changed since the registry was generated and "
            f"{plural(n, 'was', 'were')} left as {plural(n, 'it was', 'they were')}[/red]: "
            f"check {plural(n, 'it', 'them')}, then re-run with --force to take the new "
            f"{plural(n, 'line')} (names are kept)"
        )
        raise typer.Exit(1)


generate_registry.__doc__ = reflow(generate_registry.__doc__)
generate_app.command("registry")(generate_registry)
