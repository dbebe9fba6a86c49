"""``migrate-cron plan CRONTAB…``: the order to move the lines in, by pain not by effort."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import JsonFlag, TzOption, reflow
from migrate_cron.config import DEFAULT_REGISTRY, REGISTRY_ENV

if TYPE_CHECKING:
    from migrate_cron.migration.planning import PlanRow


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)


def plan(
    crontabs: Annotated[
        list[str],
        typer.Argument(
            help="Crontab files (user or system format), or HOST:PATH for a copy of HOST's "
            "crontab.",
            show_default=False,
            metavar="CRONTAB...",
        ),
    ],
    as_json: JsonFlag = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Markdown for a ticket or pull request.")
    ] = False,
    tz: TzOption = None,
    registry: Annotated[
        str | None,
        typer.Option(
            "--registry",
            "-r",
            envvar=REGISTRY_ENV,
            help=f"Show the registry's job names (default: {DEFAULT_REGISTRY} if present).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The migration plan, by pain: lost work first, then pollers, long runs, and the rest.

    (1) lines where lost work hurts most (hand-overs: exports, invoices, payments, mail,
    webhooks, syncs), (2) lines that poll every few minutes, (3) long runs to split into a
    producer plus many small jobs, (4) lines to leave alone — each with the words or findings
    behind it. Table, --json or --markdown.
    """
    from migrate_cron.errors import UsageError
    from migrate_cron.migration.planning import analyze_files, plan_rows

    if as_json and markdown:
        raise UsageError("choose one of --json and --markdown")
    if tz is not None:
        from migrate_cron.crontab.timezone import check_zone

        check_zone(tz)
    rows = _with_registry_names(plan_rows(analyze_files(crontabs, default_tz=tz)), registry)
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json({"plan": [r.as_dict() for r in rows]})
    elif markdown:
        sys.stdout.write(render_markdown(rows))
    else:
        _render_table(rows)


def render_markdown(rows: list[PlanRow]) -> str:
    out = ["# Migration plan", ""]
    step = 0
    for r in rows:
        if r.step != step:
            step = r.step
            out += [
                "",
                f"## {step}. {r.title}",
                "",
                "| # | job | line | schedule | why |",
                "|---|---|---|---|---|",
            ]
        why = _md(r.reason) + ("" if r.step >= 4 else f" — next: `{_md(r.next_command)}`")
        out.append(
            f"| {r.order} | `{r.job}` | {_md(r.file)}:{r.line} | `{_md(r.schedule)}` | {why} |"
        )
    return "\n".join(out).replace("\n\n\n", "\n\n") + "\n"


def _render_table(rows: list[PlanRow]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from migrate_cron.cli.render.fit import FitOrStack

    console = Console() if sys.stdout.isatty() else Console(width=160)
    if not rows:
        console.print("no job lines to plan")
        return
    for step in sorted({r.step for r in rows}):
        group = [r for r in rows if r.step == step]
        console.print(f"[bold]{step}. {escape(group[0].title)}[/bold]")
        table = Table(box=None, pad_edge=False, show_header=False, padding=(0, 2, 0, 0))
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("job", no_wrap=True)
        table.add_column("line", no_wrap=True)
        table.add_column("schedule", no_wrap=True)
        table.add_column("why", overflow="fold")
        for r in group:
            why = escape(r.reason)
            if r.step < 4:
                why += f" [dim]→ {escape(r.recommendation)}, missed runs: {escape(r.policy)}[/dim]"
            table.add_row(
                f"{r.order}.",
                escape(r.job),
                escape(f"{r.where}:{r.line}"),
                escape(r.schedule),
                why,
            )
        console.print(FitOrStack(table))
        console.print()
    first = next((r for r in rows if r.step < 4), None)
    if first is not None:
        from migrate_cron.cli.common import info

        every = " ".join(dict.fromkeys(r.where for r in rows))
        step_one = (
            f"`migrate-cron generate registry {every}`, then " if not first.registry_name else ""
        )
        info(escape(f"start with {first.job}: {step_one}`{first.next_command}`"))


def _with_registry_names(rows: list[PlanRow], registry: str | None) -> list[PlanRow]:
    """Use the names the registry gave these lines, so the plan names what `migrate` takes."""
    from dataclasses import replace

    from migrate_cron.registry import load_registry

    path = Path(registry or DEFAULT_REGISTRY)
    if not path.exists():  # no registry yet: the plan names lines the way analyze does
        return rows
    reg = load_registry(path)
    base = path.resolve().parent
    by_line = {}
    for job in reg:
        for origin in job.sources:
            src = Path(origin.file)
            full = src if src.is_absolute() else base / src
            by_line[(str(full.resolve()), origin.text)] = job.name
    return [
        replace(r, registry_name=by_line.get((str(Path(r.file).resolve()), r.text))) for r in rows
    ]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


plan.__doc__ = reflow(plan.__doc__)
