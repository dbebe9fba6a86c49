"""``migrate-cron migrate | rollback``: one crontab line at a time, to the queue and back.

The commands parse arguments, call ``migrate_cron.migration`` and print: the diff (or JSON) on
stdout, what happened and what to do next on stderr.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from migrate_cron.cli.common import (
    CronChoice,
    CronOption,
    DatabaseUrl,
    JsonFlag,
    RegistryPath,
    TablePrefix,
    info,
    reflow,
)
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.migration.line_switch import SwitchResult
    from migrate_cron.registry import Registry


class FileFormat(StrEnum):
    user = "user"
    system = "system"


class ToMode(StrEnum):
    enqueue = "enqueue"
    scheduler = "scheduler"


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)
    app.command("rollback")(rollback)


Name = Annotated[str, typer.Argument(help="The job's name in the registry.", show_default=False)]
CrontabOption = Annotated[
    list[str] | None,
    typer.Option(
        "--crontab",
        help="A crontab file holding the job's line, or HOST:PATH for one origin of a job "
        "that ran on several hosts; repeat for more. Default: every origin, in the file it "
        "was generated from.",
        show_default=False,
    ),
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the diff; change nothing on disk.")]


def migrate(
    name: Name,
    crontab: CrontabOption = None,
    to: Annotated[
        ToMode,
        typer.Option(
            "--to",
            help=(
                "enqueue: cron keeps the schedule and only enqueues, workers run the command. "
                "scheduler: the line is commented out, the migrate-cron scheduler owns it."
            ),
            case_sensitive=False,
        ),
    ] = ToMode.enqueue,
    dry_run: DryRun = False,
    install: Annotated[
        bool,
        typer.Option(
            "--install",
            help="User crontab: pipe the result to `crontab -` (after checking `crontab -l` "
            "still matches the file).",
        ),
    ] = False,
    executable: Annotated[
        str | None,
        typer.Option(
            "--executable",
            help="Path of migrate-cron as cron will run it. Default: this command's own path.",
            show_default=False,
        ),
    ] = None,
    url_from_env: Annotated[
        bool,
        typer.Option(
            "--url-from-env",
            help="Write no database URL into the crontab line; cron must then provide "
            "MIGRATE_CRON_DATABASE_URL (needed for URLs with a password).",
        ),
    ] = False,
    file_format: Annotated[
        FileFormat | None,
        typer.Option(
            "--format",
            help="The crontab's format, when its place does not say it (cron.d and "
            "/etc/crontab are system, cron's spool is user): required when its lines could "
            "be read either way.",
            case_sensitive=False,
        ),
    ] = None,
    strip_swallow: Annotated[
        bool,
        typer.Option(
            "--strip-swallow",
            help="Remove the `> /dev/null` redirections from the registry's command too, so "
            "a failed attempt keeps its output (the crontab line keeps its text for rollback).",
        ),
    ] = False,
    keep_swallow: Annotated[
        bool,
        typer.Option(
            "--keep-swallow",
            help="Keep a tail that forces success (`|| true`, `; exit 0`) in the registry's "
            "command. By default it is removed, so failures reach the queue's retries and "
            "its failed shelf; kept, a failed run is recorded done (and `verify` fails).",
        ),
    ] = False,
    cron: CronOption = CronChoice.debian,
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Switch one job's crontab line to the queue, with a diff, a backup and an undo.

    --to enqueue replaces only the command with `migrate-cron enqueue NAME` (the schedule stays
    in cron; workers run the command with retries). --to scheduler comments the line out with
    a marker (the scheduler service now owns it). Refuses a line edited since the registry was
    generated. A tail that forces success (`|| true`) leaves the registry's command, so the
    queue sees failures (`--keep-swallow` keeps it). Undo with `migrate-cron rollback NAME`.
    """
    from migrate_cron.clock import SystemClock
    from migrate_cron.migration import switch
    from migrate_cron.migration.line_switch import AlreadyThere
    from migrate_cron.migration.target import cron_target
    from migrate_cron.registry import load_registry

    registry_path = Path(registry)
    loaded = load_registry(registry_path)
    if name not in loaded.jobs:
        _explain_reboot(name, loaded, crontab, file_format, cron.value)
    spec = loaded.get(name)  # unknown names fail before anything else
    target = cron_target(registry_path, executable, database_url, table_prefix, url_from_env)
    if not dry_run and spec.mode != to.value:
        _check_database(database_url, table_prefix, name, to.value)
    try:
        results = switch.migrate(
            registry_path,
            name,
            to.value,
            target,
            SystemClock().now(),
            crontab=crontab,
            dry_run=dry_run,
            install=install,
            file_format=file_format.value if file_format else None,
            strip_swallow=strip_swallow,
            keep_swallow=keep_swallow,
            cron=cron.value,
        )
    except AlreadyThere as exc:
        info(str(exc))
        return
    _print_results(results, as_json)
    for result in results:
        _explain_migrate(result, registry_path, dry_run)
    _next_steps(name, dry_run)


def _explain_reboot(
    name: str,
    loaded: Registry,
    crontab: list[str] | None,
    file_format: FileFormat | None,
    cron: str,
) -> None:
    """An @reboot line has no registry entry on purpose: say so (exit 0) rather than "no
    job"; any other unknown name falls through to the registry's own error."""
    from migrate_cron.crontab.sources import split_origin
    from migrate_cron.migration.generation import reboot_line_named

    paths = [split_origin(c)[1] for c in crontab or []] or [
        source.file for spec in loaded for source in spec.sources
    ]
    where = reboot_line_named(name, paths, file_format.value if file_format else "auto", cron)
    if where is None:
        return
    info(
        f"{name} ({where}) is an @reboot line: it runs once when cron starts, not on a "
        "schedule, so generate left it on cron on purpose. Nothing to migrate; keep it in "
        "the crontab (or make it a systemd unit)."
    )
    raise typer.Exit(0)


def rollback(
    name: Name,
    crontab: CrontabOption = None,
    dry_run: DryRun = False,
    install: Annotated[
        bool | None,
        typer.Option(
            "--install/--no-install",
            help="Pipe the restored user crontab to `crontab -`. Default: as the migrate did.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Put one job's original crontab line back, byte for byte, and its previous mode."""
    from migrate_cron.migration import switch
    from migrate_cron.migration.line_switch import AlreadyThere

    try:
        results = switch.rollback(
            Path(registry), name, crontab=crontab, dry_run=dry_run, install=install
        )
    except AlreadyThere as exc:
        info(str(exc))
        return
    _print_results(results, as_json)
    verb = "would restore" if dry_run else "restored"
    for result in results:
        info(
            f"{verb} line {result.line} of {result.crontab}: {name} is back on {result.mode}"
            + (f" (backup of the switched file: {result.backup})" if result.backup else "")
        )
        for note in result.notes:
            info(escape(f"note: {note}"))
        _install_note(result, dry_run)
    if not dry_run:
        _warn_queued(database_url, table_prefix, name)


# ------------------------------------------------------------------------ helpers
def _check_database(url: str, prefix: str, name: str, to: str) -> None:
    from migrate_cron.cli.common import open_store
    from migrate_cron.migration.queue_guard import check_queue_ready

    store = open_store(url, prefix)
    try:
        if check_queue_ready(store, name, to):
            info(
                "[yellow]warning:[/yellow] no migrate-cron scheduler is running against "
                f"{store.url_safe}; start `migrate-cron scheduler`, or {name} will not run"
            )
    finally:
        store.dispose()


def _print_results(results: list[SwitchResult], as_json: bool) -> None:
    """The diffs; with --json one object: the first origin's fields (what a single-origin
    job always printed) and ``origins``, every origin's."""
    import sys

    if as_json:
        from dataclasses import asdict

        from migrate_cron.cli.common import print_json

        print_json({**asdict(results[0]), "origins": [asdict(r) for r in results]})
    else:
        for result in results:
            sys.stdout.write(result.diff)


def _explain_migrate(result: SwitchResult, registry: Path, dry_run: bool) -> None:
    name = result.name
    if dry_run:
        info(
            f"dry run: nothing changed. Without --dry-run, line {result.line} of "
            f"{result.crontab} becomes the line above and {name} gets mode {result.mode}"
        )
        for note in result.notes:
            info(escape(f"note: {note}"))
        return
    if result.mode == Mode.ENQUEUE:
        info(
            f"switched {name} to enqueue: line {result.line} of {result.crontab} now only "
            "enqueues it; the schedule stays in cron and workers run the command with retries"
        )
    else:
        info(
            f"switched {name} to the scheduler: line {result.line} of {result.crontab} is "
            "commented out; `migrate-cron scheduler` now fires it"
        )
    info(f"backup of the previous file: {result.backup}; registry: {registry} (mode updated)")
    if result.run_as and result.mode == Mode.ENQUEUE:
        info(
            f"cron runs this line as {result.run_as}: that user must be able to read "
            f"{registry.resolve()} and reach the database (for SQLite: write the file and its "
            "directory)"
        )
    for note in result.notes:
        info(escape(f"note: {note}"))
    _install_note(result, dry_run)


def _next_steps(name: str, dry_run: bool) -> None:
    if dry_run:
        return
    info(
        "next: keep a worker running (`migrate-cron worker`), then after its next slot run "
        f"`migrate-cron verify {name}`; undo any time with `migrate-cron rollback {name}`"
    )


def _install_note(result: SwitchResult, dry_run: bool) -> None:
    if dry_run:
        return
    if result.installed:
        info("installed it as your user crontab (`crontab -`)")
    elif not result.crontab.startswith("/etc/"):
        info(
            "if this file is a copy of a user crontab, install it with "
            f"`crontab {result.crontab}` (or use --install); system files in /etc are read "
            "by cron in place"
        )


def _warn_queued(url: str, prefix: str, name: str) -> None:
    from migrate_cron.cli.common import open_store
    from migrate_cron.migration.queue_guard import still_queued

    store = open_store(url, prefix)
    try:
        waiting = still_queued(store, name)
    finally:
        store.dispose()
    if waiting:
        info(
            f"[yellow]warning:[/yellow] {waiting} {name} job(s) are still queued or running; "
            "a worker will run them besides cron. Cancel them with `migrate-cron jobs cancel "
            "ID…` (see `migrate-cron jobs list --kind "
            f"{name}`) if cron's next run covers them"
        )


for _command in (migrate, rollback):
    _command.__doc__ = reflow(_command.__doc__)
