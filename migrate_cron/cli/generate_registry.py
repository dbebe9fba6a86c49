"""``migrate-cron generate registry``: one registry entry per crontab line, and on stderr
every choice generation made (the zone, the lines skipped or refused, and why).

``migration.generation`` proposes and merges; this prints the diff or the registry's path (or
JSON) on stdout and the rest on stderr, and chooses the exit code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from migrate_cron.cli.common import CronChoice, CronOption, JsonFlag, TzOption, reflow
from migrate_cron.config import DEFAULT_REGISTRY


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
            f"policies, then `{shown(plan_command(crontabs, output))}` (it ends with the first "
            "`migrate` to run)"
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


def plan_command(crontabs: list[str], output: Path) -> str:
    """``plan`` for the same files (it takes them as arguments), with the registry just
    written unless it is the default ``plan`` finds by itself: the hint runs as written."""
    import shlex

    words = ["migrate-cron", "plan", *crontabs]
    if output != Path(DEFAULT_REGISTRY):
        words += ["-r", str(output)]
    return shlex.join(words)
