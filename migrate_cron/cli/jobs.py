"""``migrate-cron jobs``: look at single jobs and act on them (list, show, retry, cancel;
``jobs run`` is ``jobs_run.py``). What acts is recorded in the action log as the OS user.

Bulk changes run in chunks, each chunk its own short transaction, and ask first: a prompt on a
terminal, ``--yes`` otherwise (without a terminal and without ``--yes`` they refuse rather than
guess).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.actor import cli_actor
from migrate_cron.cli.common import DatabaseUrl, JsonFlag, TablePrefix
from migrate_cron.cli.jobs_list import at as _at
from migrate_cron.cli.jobs_list import first_line as _first_line
from migrate_cron.cli.jobs_list import job_dict as _job_dict
from migrate_cron.cli.jobs_list import list_jobs
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL
from migrate_cron.vocabulary import CANCELLABLE_STATES, RETRYABLE_STATES, JobState

if TYPE_CHECKING:
    from migrate_cron.store import Store
    from migrate_cron.store.models import Attempt

jobs_app = typer.Typer(
    name="jobs",
    help="List, inspect, retry and cancel jobs.",
    no_args_is_help=True,
)

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
Ids = Annotated[list[int] | None, typer.Argument(help="Job ids.", show_default=False)]


def register(app: typer.Typer) -> None:
    app.add_typer(jobs_app, name="jobs")


jobs_app.command("list")(list_jobs)


@jobs_app.command("show")
def show(
    job_id: Annotated[int, typer.Argument(help="The job id.")],
    tail: Annotated[int, typer.Option("--tail", min=0, help="Lines of output to show.")] = 40,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """One job: payload, attempts, last error, output tail, timestamps and its run history
    (one line per recorded run: when it started, how long it ran, where, how it ended)."""
    from migrate_cron.errors import MigrateCronError

    with _store(database_url, table_prefix) as store:
        job = store.get(job_id)
        history = store.attempts(job_id) if job is not None else []
    if job is None:
        raise MigrateCronError(f"no job with id {job_id}")
    if as_json:
        from dataclasses import asdict

        from migrate_cron.cli.common import print_json

        runs = [{**asdict(a), "duration": a.duration} for a in history]
        print_json({**_job_dict(job), "attempt_history": runs})
        return
    import json

    out = sys.stdout
    out.write(f"job {job.id}  kind={job.kind}  state={job.state}\n")
    out.write(f"  ref:           {job.ref or '-'}\n")
    out.write(f"  attempts:      {job.attempts} of {job.max_attempts}\n")
    for name in (
        "created_at",
        "run_at",
        "scheduled_for",
        "started_at",
        "finished_at",
        "locked_until",
    ):
        out.write(f"  {name + ':':<14} {_at(getattr(job, name))}\n")
    out.write(f"  locked_by:     {job.locked_by or '-'}\n")
    out.write("payload:\n")
    out.write(_indent(json.dumps(job.payload, indent=2, ensure_ascii=False, default=str)))
    out.write("last error:\n")
    out.write(_indent(job.last_error or "-"))
    lines = (job.output or "").splitlines()
    shown = lines[-tail:] if tail else []
    header = f"output (last {len(shown)} of {len(lines)} lines)" if lines else "output"
    out.write(f"{header}:\n")
    out.write(_indent("\n".join(shown) if shown else "-"))
    out.write(f"runs ({len(history)} recorded):\n")
    out.write(_indent("\n".join(_run_line(a) for a in history) if history else "-"))


def _run_line(run: Attempt) -> str:
    """One recorded run on one line that fits 80 columns before the error's first line."""
    code = "-" if run.exit_code is None else str(run.exit_code)
    head = f"#{run.attempt} {_at(run.started_at)} {run.duration:.3f}s {run.outcome} exit={code}"
    detail = _first_line(run.error, 60)
    return f"{head} on {run.worker}" + (f": {detail}" if detail else "")


@jobs_app.command("retry")
def retry(
    ids: Ids = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="All failed jobs of this kind.")
    ] = None,
    all_failed: Annotated[bool, typer.Option("--all-failed", help="All failed jobs.")] = False,
    yes: Yes = False,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Run jobs again: back to open, attempts reset, due now.

    The given ids (failed or cancelled), or every failed job of --kind, or --all-failed.
    """
    from migrate_cron.errors import UsageError

    chosen = sum([bool(ids), kind is not None, all_failed])
    if chosen != 1:
        raise UsageError("name what to retry: job ids, or --kind KIND, or --all-failed")
    states = RETRYABLE_STATES if ids else (JobState.FAILED,)
    with _store(database_url, table_prefix) as store:
        n = store.count_jobs(ids or None, kind=kind, states=states)
        what = _what(n, ids, kind, "failed or cancelled" if ids else "failed")
        if n and not _confirm(
            f"Retry {what} (back to open, attempts reset, run now)?", yes, "retry"
        ):
            raise typer.Exit(1)
        done = (
            0
            if not n
            else store.retry(
                ids or None, kind=kind, all_failed=all_failed, states=states, actor=cli_actor()
            )
        )
    _report("retried", done, ids, "failed or cancelled", as_json)


@jobs_app.command("cancel")
def cancel(
    ids: Annotated[list[int], typer.Argument(help="Job ids.", show_default=False)],
    yes: Yes = False,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Cancel open, running or failed jobs.

    A worker never runs a cancelled job. A running one is stopped at its
    worker's next heartbeat: its process group gets SIGTERM, then SIGKILL after
    the kill grace (5 s); its result is ignored (a Python handler is asked to
    stop through its context). Cancelling a failed job acknowledges it: it no
    longer counts as failed.

    Example: migrate-cron jobs cancel 42 43 --yes
    """
    from migrate_cron.cli.common import info

    with _store(database_url, table_prefix) as store:
        n = store.count_jobs(ids, states=CANCELLABLE_STATES)
        running = store.count_jobs(ids, states=(JobState.RUNNING,)) if n else 0
        if n and not _confirm(
            f"Cancel {_what(n, ids, None, 'open, running or failed')}?", yes, "cancel"
        ):
            raise typer.Exit(1)
        done = store.cancel(ids, actor=cli_actor()) if n else 0
    if running:
        info(
            f"note: {running} of them were running: their workers stop them at the next "
            "heartbeat (SIGTERM, then SIGKILL after 5 s) and ignore their results"
        )
    _report("cancelled", done, ids, "open, running or failed", as_json)


# ---------------------------------------------------------------------- helpers
@contextlib.contextmanager
def _store(url: str, prefix: str) -> Iterator[Store]:
    """The store for one command, disposed at the end."""
    from migrate_cron.cli.common import open_store

    store = open_store(url, prefix)
    try:
        yield store
    finally:
        store.dispose()


def _confirm(question: str, yes: bool, verb: str) -> bool:
    from migrate_cron.errors import UsageError

    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"stdin is not a terminal: pass --yes to {verb} without a prompt")
    if typer.confirm(question, default=False, err=True):
        return True
    from migrate_cron.cli.common import info

    info("nothing changed")
    return False


def _what(n: int, ids: list[int] | None, kind: str | None, states: str) -> str:
    noun = "job" if n == 1 else "jobs"
    if ids:
        return f"{n} {noun} ({states}) of the {len(ids)} given"
    if kind is not None:
        return f"{n} {states} {noun} of kind {kind!r}"
    return f"{n} {states} {noun}"


def _report(verb: str, n: int, ids: list[int] | None, states: str, as_json: bool) -> None:
    from migrate_cron.cli.common import info, print_json

    skipped = len(set(ids)) - n if ids else 0
    if as_json:
        print_json({verb: n, "skipped": skipped})
    else:
        sys.stdout.write(f"{verb} {n} job{'s' if n != 1 else ''}\n")
    if skipped:
        info(f"{skipped} of the given ids were skipped: not {states}, or no such job")
    if ids and n == 0:
        raise typer.Exit(1)


def _indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines() or [""])
