"""``migrate-cron migrate | rollback | verify | migrations``: one crontab line at a time.

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
from migrate_cron.config import DEFAULT_DATABASE_URL, DEFAULT_REGISTRY
from migrate_cron.vocabulary import UNFINISHED_STATES, Mode

if TYPE_CHECKING:
    from rich.console import Console

    from migrate_cron.migration.line_switch import SwitchResult, Target
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
    app.command("verify")(verify)
    app.command("migrations")(migrations)


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
    from migrate_cron.registry import load_registry

    registry_path = Path(registry)
    loaded = load_registry(registry_path)
    if name not in loaded.jobs:
        _explain_reboot(name, loaded, crontab, file_format, cron.value)
    spec = loaded.get(name)  # unknown names fail before anything else
    target = _target(registry_path, executable, database_url, table_prefix, url_from_env)
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


# The two commands below need the crontab parser; see verify.py and progress.py.
def verify(
    name: Name,
    crontab: Annotated[
        list[Path] | None,
        typer.Option(
            "--crontab",
            help="Crontab files to search for a second line running the same command "
            "(repeatable). Default: the job's own file.",
            show_default=False,
        ),
    ] = None,
    days: Annotated[
        int, typer.Option("--days", min=1, max=366, help="How far ahead to compare slots.")
    ] = 7,
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Check a switch: same slots as cron, no second line running the command, queue runs,
    and (once switched) a scheduler leading in scheduler mode and a worker taking the jobs.

    Exit 1 when a check fails (the failing checks say what to do).
    """
    from migrate_cron.cli.common import print_json
    from migrate_cron.clock import SystemClock
    from migrate_cron.migration.verify import verify_job
    from migrate_cron.registry import load_registry

    reg = load_registry(registry, partial=True)  # the others' errors: a failed check
    spec = reg.get(name)
    report = verify_job(
        reg,
        spec,
        files=crontab,
        days=days,
        now=SystemClock().now(),
        history=lambda since: _history(database_url, table_prefix, name, since),
        live=lambda: _liveness(database_url, table_prefix, name),
    )
    if as_json:
        print_json(report.as_dict())
    else:
        _print_verify(report)
    if not report.ok:
        raise typer.Exit(1)


def migrations(
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Every registry job: its mode, its last run in the queue, and the next step of the plan."""
    from migrate_cron.cli.common import print_json
    from migrate_cron.migration.progress import progress
    from migrate_cron.registry import load_registry

    reg = load_registry(registry)
    rows, db_error = progress(reg, lambda names: _histories(database_url, table_prefix, names))
    if db_error:
        info(f"[yellow]note:[/yellow] no queue numbers: {db_error}")
    if as_json:
        print_json({"jobs": [r.as_dict() for r in rows]})
        return
    _print_progress(rows)


# ------------------------------------------------------------------------ helpers
def _target(
    registry: Path, executable: str | None, url: str, prefix: str, url_from_env: bool
) -> Target:
    from migrate_cron.config import validate_prefix
    from migrate_cron.migration.line_switch import Target

    return Target(
        executable=_executable(executable),
        registry=str(registry.resolve()),
        database_url=None if url_from_env else _cron_url(url),
        table_prefix=validate_prefix(prefix),
    )


def _executable(given: str | None) -> str:
    import os
    import shutil
    import sys

    from migrate_cron.errors import UsageError

    if given:
        if not os.path.isabs(given):
            raise UsageError(f"--executable {given}: give an absolute path (cron has no PATH)")
        return given
    argv0 = sys.argv[0]
    if os.path.basename(argv0) == "migrate-cron" and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    found = shutil.which("migrate-cron")
    if found:
        return os.path.abspath(found)
    raise UsageError(
        "cannot tell where the migrate-cron command is installed: pass --executable PATH"
    )


def _cron_url(url: str) -> str:
    """The database URL as the crontab line will carry it: absolute SQLite paths (cron runs
    in HOME) and never a password (a crontab is readable by more people than a secret is)."""
    from sqlalchemy.engine import make_url

    from migrate_cron.config import mask_url, normalize_url, url_secret
    from migrate_cron.errors import UsageError

    try:
        parsed = make_url(normalize_url(url))
    except Exception:
        raise UsageError(f"--database-url: not a database URL: {mask_url(url)!r}") from None
    secret = url_secret(url)
    if parsed.password or secret:
        raise UsageError(
            f"the crontab line would contain a database secret ({secret or 'a password'}). "
            "Use a URL without one "
            "(PostgreSQL reads ~/.pgpass of the crontab's user; MySQL/MariaDB: add "
            "?read_default_file=/home/USER/.my.cnf), or pass --url-from-env and set "
            "MIGRATE_CRON_DATABASE_URL for cron yourself"
        )
    from migrate_cron.store.engine import absolute_file

    return str(absolute_file(parsed).render_as_string(hide_password=False))


def _check_database(url: str, prefix: str, name: str, to: str) -> None:
    """Refuse to hand a job to a queue whose tables do not exist: every run would be lost."""
    from migrate_cron.cli.common import open_store
    from migrate_cron.errors import MigrateCronError
    from migrate_cron.migration.line_switch import Refused

    store = open_store(url, prefix)
    try:
        store.count_jobs(kind=name)
        if to == Mode.SCHEDULER:
            holder = store.lease_holder("migrate-cron-scheduler")
            now = store.db_now()
            if holder is None or holder[1] < now:
                info(
                    "[yellow]warning:[/yellow] no migrate-cron scheduler is running against "
                    f"{store.url_safe}; start `migrate-cron scheduler`, or {name} will not run"
                )
    except MigrateCronError as exc:
        raise Refused(
            f"{exc}. The switched line would lose every run: fix this first (nothing was "
            "changed), or look at the change with --dry-run"
        ) from None
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
    """After a rollback cron runs the command again: jobs still queued would run it twice."""
    from migrate_cron.cli.common import open_store
    from migrate_cron.errors import MigrateCronError

    store = open_store(url, prefix)
    try:
        waiting = store.count_jobs(kind=name, states=UNFINISHED_STATES)
    except MigrateCronError:
        return
    finally:
        store.dispose()
    if waiting:
        info(
            f"[yellow]warning:[/yellow] {waiting} {name} job(s) are still queued or running; "
            "a worker will run them besides cron. Cancel them with `migrate-cron jobs cancel "
            "ID…` (see `migrate-cron jobs list --kind "
            f"{name}`) if cron's next run covers them"
        )


def _history(url: str, prefix: str, name: str, since):  # type: ignore[no-untyped-def]
    from migrate_cron.cli.common import open_store

    store = open_store(url, prefix)
    try:
        return store.kind_history([name], since)[name]
    finally:
        store.dispose()


def _liveness(url: str, prefix: str, name: str):  # type: ignore[no-untyped-def]
    from migrate_cron.cli.common import open_store
    from migrate_cron.migration.check_alive import Liveness
    from migrate_cron.store.leases import REAPER_LEASE, SCHEDULER_LEASE

    store = open_store(url, prefix)
    try:
        now = store.db_now()
        held = store.lease_holder(SCHEDULER_LEASE)
        reaper = store.lease_holder(REAPER_LEASE)
        kinds = {k.kind: k for k in store.status(now, now).kinds}
    finally:
        store.dispose()
    kind = kinds.get(name)
    oldest = kind.oldest_ready_at if kind is not None else None
    return Liveness(
        leader=(held[0], (held[1] - now).total_seconds()) if held else None,
        ready=kind.ready if kind is not None else 0,
        oldest_ready_age=(now - oldest).total_seconds() if oldest is not None else None,
        worker=(reaper[0], (reaper[1] - now).total_seconds()) if reaper else None,
    )


def _histories(url: str, prefix: str, names):  # type: ignore[no-untyped-def]
    from migrate_cron.cli.common import open_store

    store = open_store(url, prefix)
    try:
        return store.kind_history(list(names))
    finally:
        store.dispose()


def _console() -> Console:
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=160)


def _print_verify(report) -> None:  # type: ignore[no-untyped-def]
    from rich.markup import escape

    console = _console()
    verdict = "[green]ok[/green]" if report.ok else "[red]a check failed[/red]"
    console.print(f"[bold]{escape(report.name)}[/bold] (mode {report.mode}): {verdict}")
    for check in report.checks:
        mark = {"ok": "[green]ok[/green]     ", "fail": "[red]FAIL[/red]   "}.get(
            check.status, f"[yellow]{check.status:7}[/yellow]"
        )
        console.print(f"  {mark} {escape(check.title)}: {escape(check.summary)}")
        for line in check.details:
            console.print(f"           {escape(line)}")


def _print_progress(rows) -> None:  # type: ignore[no-untyped-def]
    from rich.markup import escape
    from rich.table import Table

    from migrate_cron.cli.render.fit import FitOrStack

    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
    for col in ("job", "mode", "line", "last success", "runs since switch"):
        table.add_column(col, no_wrap=True)
    table.add_column("next step", overflow="fold")
    for r in rows:
        table.add_row(
            escape(r.name),
            r.mode,
            escape(r.where),
            r.last_run_text,
            r.runs_text,
            escape(r.next_step),
        )
    _console().print(FitOrStack(table))


for _command in (migrate, rollback, verify, migrations):
    _command.__doc__ = reflow(_command.__doc__)
