"""``migrate-cron plan CRONTAB…``: the order to move the lines in, by pain not by effort."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import JsonFlag, TzOption, reflow
from migrate_cron.config import DEFAULT_REGISTRY, REGISTRY_ENV

if TYPE_CHECKING:
    from rich.console import RenderableType

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
    producer plus many small jobs, (4) lines to keep on cron — each with the words or findings
    behind it. Table, --json or --markdown.
    """
    from migrate_cron.errors import UsageError
    from migrate_cron.migration.planning import analyze_files, generate_command, plan_rows

    if as_json and markdown:
        raise UsageError("choose one of --json and --markdown")
    if tz is not None:
        from migrate_cron.crontab.timezone import check_zone

        check_zone(tz)
    report = analyze_files(crontabs, default_tz=tz)
    rows = _with_registry_names(plan_rows(report), registry)
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json({"plan": [r.as_dict() for r in rows]})
    elif markdown:
        sys.stdout.write(render_markdown(rows))
    else:
        _render_table(rows, generate_command(report, rows, tz))


def render_markdown(rows: list[PlanRow]) -> str:
    """Markdown for a ticket: a heading per step (not numbered: the rows are), a table each."""
    out = ["# Migration plan", ""]
    for title, group in _steps(rows):
        out += [
            "",
            f"## {_md(title)}",
            "",
            "| # | job | line | schedule | why |",
            "|---|---|---|---|---|",
        ]
        for r in group:
            why = _md(r.reason) + ("" if r.step >= 4 else f" — next: `{_md(r.next_command)}`")
            out.append(
                f"| {r.order} | `{_md(r.job)}` | {_md(r.where)}:{r.line} | `{_md(r.schedule)}` "
                f"| {why} |"
            )
    return "\n".join(out).replace("\n\n\n", "\n\n") + "\n"


def _steps(rows: list[PlanRow]) -> list[tuple[str, list[PlanRow]]]:
    """The rows per step, in step order, each with its heading: the step's title as a
    sentence and how many jobs it holds ("Lost work hurts most — 3 jobs"). Headings carry no
    number, so only the rows read as the order to move in."""
    from migrate_cron.cli.render.numbers import counted

    out = []
    for step in sorted({r.step for r in rows}):
        group = [r for r in rows if r.step == step]
        title = group[0].title
        out.append((f"{title[:1].upper()}{title[1:]} — {counted(len(group), 'job')}", group))
    return out


def _render_table(rows: list[PlanRow], generate: tuple[str, str]) -> None:
    from rich.markup import escape

    from migrate_cron.cli.render.console import report_console
    from migrate_cron.cli.render.escape import printable

    def shown(text: str) -> str:
        return escape(printable(text))

    console = report_console(pipe_width=160)
    if not rows:
        console.print("no job lines to plan")
        return
    for title, group in _steps(rows):
        console.print(f"[bold underline]{shown(title)}[/bold underline]")
        cells = [
            (
                f"{r.order}.",
                shown(r.job),
                shown(f"{r.where}:{r.line}"),
                shown(r.schedule),
                shown(r.reason)
                + (
                    f" [dim]→ {shown(r.recommendation)}, missed runs: {shown(r.policy)}[/dim]"
                    if r.step < 4
                    else ""
                ),
            )
            for r in group
        ]
        console.print(_step_table(cells, console.width))
        console.print()
    first = next((r for r in rows if r.step < 4), None)
    if first is not None:
        from migrate_cron.cli.common import info

        command, when = generate
        step_one = (  # the first time: the registry and the tables `migrate` needs
            f"`{command}`{when}, `migrate-cron db upgrade` (or your own Alembic project: "
            "README, Two ways to the tables), then "
            if not first.registry_name
            else ""
        )
        info(shown(f"start with {first.job}: {step_one}`{first.next_command}`"))


#: Narrower than this, the reason goes under its row instead of into a column of its own.
WHY_MIN_WIDTH = 40


def _step_table(cells: list[tuple[str, str, str, str, str]], width: int) -> RenderableType:
    """A step's rows: number, job, line, schedule and why side by side when the why column
    gets at least ``WHY_MIN_WIDTH`` columns; else each why on its own line under its row,
    indented under the job (a why folded into a column of a dozen characters reads as noise)."""
    from rich.markup import render
    from rich.table import Table

    from migrate_cron.cli.render.fit import FitOrStack

    widths = [max(render(row[i]).cell_len for row in cells) for i in range(4)]
    table = Table(box=None, pad_edge=False, show_header=False, padding=(0, 2, 0, 0))
    table.add_column("#", justify="right", no_wrap=True)
    if width - sum(widths) - 2 * 4 >= WHY_MIN_WIDTH:
        table.add_column("job", no_wrap=True)
        table.add_column("line", no_wrap=True)
        table.add_column("schedule", no_wrap=True)
        table.add_column("why", overflow="fold")
        for row in cells:
            table.add_row(*row)
        return FitOrStack(table)
    table.add_column("what", overflow="fold")
    for number, job, where, schedule, why in cells:
        table.add_row(number, f"[bold]{job}[/bold]  {where}  {schedule}\n{why}")
    return table


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
    from migrate_cron.cli.render.escape import printable

    return printable(text.replace("|", "\\|").replace("\n", " "))


plan.__doc__ = reflow(plan.__doc__)
