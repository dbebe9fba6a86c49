"""``migrate-cron jobs list``: find jobs by kind, state, creation time and a text search, a
page at a time (an id cursor). The filters are ``ops.job_search``'s, the console's Jobs page
uses the same, so a search means the same in both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, OptionalRegistry, TablePrefix
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL
from migrate_cron.vocabulary import JobState

if TYPE_CHECKING:
    from migrate_cron.store.models import Job

STATES = tuple(JobState)
WHEN = "a duration back from now (2h, 7d) or a date and time (2026-03-01T12:00, UTC)"


def list_jobs(
    state: Annotated[
        str | None, typer.Option("--state", help=f"Only this state: {', '.join(STATES)}.")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Only this kind.")] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="At most this many, newest first.")
    ] = 50,
    ref: Annotated[
        str | None, typer.Option("--ref", help="Only the job with this ref (unique per kind).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help=f"Only jobs created at or after this: {WHEN}."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", help=f"Only jobs created before this: {WHEN}."),
    ] = None,
    search: Annotated[
        str | None,
        typer.Option(
            "--search",
            help="Only jobs with this text (any case) in their last error, output or payload, "
            "or whose registry command holds it.",
        ),
    ] = None,
    after: Annotated[
        int | None,
        typer.Option(
            "--after",
            min=1,
            help="The next page: jobs listed after this id (older ones); the JSON's "
            "`next_after` of the previous page.",
        ),
    ] = None,
    as_json: JsonFlag = False,
    registry: OptionalRegistry = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Jobs, newest first; --limit and --after page through them.

    Example: migrate-cron jobs list --state failed --since 24h --search timeout
    """
    from migrate_cron.cli.common import open_store, optional_registry
    from migrate_cron.ops.job_search import JobQuery, check, find_jobs

    query = JobQuery(kind=kind, state=state, since=since, until=until, q=search, ref=ref)
    check(query, prefix="--")
    specs = optional_registry(registry) if search and search.strip() else []
    store = open_store(database_url, table_prefix)
    try:
        found = find_jobs(store, specs, query, limit=limit, after=after, prefix="--")
    finally:
        store.dispose()
    jobs = found.jobs
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json({"jobs": [job_dict(j) for j in jobs], "next_after": found.next_after})
        return
    from migrate_cron.cli.common import info

    if not jobs:
        info("no jobs match")  # a sentence, not an empty table's frame
        return
    from rich.table import Table

    from migrate_cron.cli.render.console import table_console
    from migrate_cron.cli.render.fit import FitOrStack

    table = Table()
    for name in ("id", "kind", "state", "attempts", "run_at", "finished_at", "last error"):
        table.add_column(name, overflow="fold" if name == "last error" else "ellipsis")
    for j in jobs:
        table.add_row(
            str(j.id),
            j.kind,
            j.state,
            f"{j.attempts}/{j.max_attempts}",
            at(j.run_at),
            at(j.finished_at),
            first_line(j.last_error),
        )
    table_console().print(FitOrStack(table))  # piped: the same layout as `status`
    if found.next_after is not None:
        info(f"more: `migrate-cron jobs list --after {found.next_after}` (same filters)")


def job_dict(job: Job) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(job)


def at(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") + "Z" if value is not None else "-"


def first_line(text: str | None, width: int = 80) -> str:
    if not text:
        return ""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"
