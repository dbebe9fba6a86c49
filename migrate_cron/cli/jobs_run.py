"""``migrate-cron jobs run NAME``: a job now, outside its schedule, recorded in the action log
as the OS user (the console's Run now calls the same ``Store.run_now``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from migrate_cron.cli.actor import cli_actor
from migrate_cron.cli.common import DatabaseUrl, JsonFlag, RegistryPath, TablePrefix
from migrate_cron.cli.jobs import _store, jobs_app
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL
from migrate_cron.vocabulary import UNFINISHED_STATES, JobState


def register(app: typer.Typer) -> None:
    """Adds ``run`` to the ``jobs`` group (``jobs.py`` adds the group)."""
    jobs_app.command("run")(run_now)


def run_now(
    name: Annotated[str, typer.Argument(help="The job (registry name).", show_default=False)],
    payload: Annotated[
        str | None,
        typer.Option(
            "--payload", help="JSON data for the job (a handler's argument).", show_default=False
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="Wait for a worker to run it; print the outcome; exit 1 if it failed."
        ),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="With --wait: give up after this many seconds (exit 2).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Run a job now, outside its schedule (after fixing bad data, say): a new job of that
    kind, due at once, with the registry's max_attempts; a worker runs it.

    Example: migrate-cron jobs run invoices-export --wait
    """
    import json

    from migrate_cron.cli.common import info, print_json
    from migrate_cron.errors import UsageError
    from migrate_cron.ops.job_wait import wait_finished
    from migrate_cron.registry import load_registry

    spec = load_registry(registry).get(name)
    data: Any = None
    if payload is not None:
        try:
            data = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--payload is not JSON: {exc}") from None
    with _store(database_url, table_prefix) as store:
        job_id = store.run_now(spec.name, data, max_attempts=spec.max_attempts, actor=cli_actor())
        if not wait:
            if as_json:
                print_json({"job": spec.name, "job_id": job_id, "state": JobState.OPEN})
            else:
                info(f"enqueued {spec.name} as job {job_id}; `migrate-cron jobs show {job_id}`")
            return
        job = wait_finished(store, job_id, timeout)
    if job is not None and job.state in UNFINISHED_STATES:
        info(f"job {job_id} is still {job.state} after {timeout:g}s (is a worker running?)")
        raise typer.Exit(2)
    assert job is not None
    if as_json:
        print_json(
            {"job": spec.name, "job_id": job_id, "state": job.state, "attempts": job.attempts,
             "last_error": job.last_error, "output": job.output}
        )  # fmt: skip
    else:
        info(f"job {job_id} ({spec.name}): {job.state} after {job.attempts} attempt(s)")
        if job.last_error and job.state != JobState.DONE:
            info(f"last error: {job.last_error.splitlines()[0][:300]}")
    if job.state != JobState.DONE:
        raise typer.Exit(1)
