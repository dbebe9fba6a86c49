"""``migrate-cron worker``: run jobs from the queue until stopped (or, with --once, drained)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, RegistryPath, TablePrefix
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from collections.abc import Callable

    from migrate_cron.registry import Registry, TableSpec
    from migrate_cron.worker.log import WorkerLog
    from migrate_cron.worker.loop import Worker
    from migrate_cron.worker.settings import WorkerSettings

HELP = (
    "Claim ready jobs and run them: registry commands as cron would, Python handlers in "
    "threads. Failures are retried with backoff, then shelved as failed with their error.\n\n"
    "Stop with SIGTERM or Ctrl-C: running jobs get --grace seconds, the rest go back to the "
    "queue at once; a second signal stops everything now. One log line per job start and "
    "finish goes to stderr.\n\n"
    "With --table NAME it claims rows of your own table instead, as described by "
    "\\[tables.NAME] in the registry (after `generate migration --claim-table NAME`): the row's "
    "key reaches the command as MIGRATE_CRON_ROW_KEY, a handler as its argument."
)


def register(app: typer.Typer) -> None:
    app.command("worker", help=HELP)(worker)


def worker(
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Jobs run at the same time (threads).")
    ] = 4,
    kinds: Annotated[
        str | None,
        typer.Option(
            "--kinds",
            "--kind",
            help="Only these kinds, comma-separated (default: every kind this worker can run: "
            "the registry's jobs and the imported @handlers).",
        ),
    ] = None,
    any_kind: Annotated[
        bool,
        typer.Option(
            "--any-kind",
            help="Also claim kinds this worker cannot run (they fail at once): a catch-all "
            "worker. Without it, such jobs wait for a worker that can run them.",
        ),
    ] = False,
    batch: Annotated[
        int | None,
        typer.Option(
            "--batch",
            help="Jobs claimed per query. Default: learnt from run times: --concurrency at "
            "first and for long jobs, up to 100 for jobs of milliseconds.",
        ),
    ] = None,
    lease: Annotated[
        float | None,
        typer.Option(
            "--lease", help="Seconds a claim is held without a heartbeat (default: 3 × heartbeat)."
        ),
    ] = None,
    heartbeat: Annotated[
        float, typer.Option("--heartbeat", help="Seconds between lease renewals and reaps.")
    ] = 10.0,
    grace: Annotated[
        float,
        typer.Option("--grace", help="Seconds running jobs get to finish after SIGTERM/SIGINT."),
    ] = 30.0,
    once: Annotated[
        bool, typer.Option("--once", help="Run until no job is ready, then exit (cron, tests).")
    ] = False,
    poll: Annotated[
        float,
        typer.Option("--poll", help="Longest wait between polls of an idle queue, in seconds."),
    ] = 1.0,
    json_logs: Annotated[
        bool, typer.Option("--json-logs", help="One JSON object per log line on stderr.")
    ] = False,
    imports: Annotated[
        list[str] | None,
        typer.Option(
            "--import",
            "-i",
            help="Python module that registers @handler functions (repeatable).",
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            help="Serve this worker's own metrics for Prometheus on this port: runs by kind "
            "and outcome, run time, running jobs, last contact with the queue, notifications. "
            "Queue metrics: `migrate-cron metrics`.",
            show_default=False,
        ),
    ] = None,
    table: Annotated[
        str | None,
        typer.Option(
            "--table",
            metavar="NAME",
            help="Claim rows of your own table, described by \\[tables.NAME] in the registry, "
            "instead of jobs: batch and lease come from there unless --batch/--lease are given.",
            show_default=False,
        ),
    ] = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
    registry: RegistryPath = DEFAULT_REGISTRY,
) -> None:
    """See ``HELP``."""
    from migrate_cron.cli.common import open_store
    from migrate_cron.notify.sender import Notifier
    from migrate_cron.store.timeouts import Use
    from migrate_cron.worker.catalog import Catalog
    from migrate_cron.worker.log import WorkerLog
    from migrate_cron.worker.loop import Worker
    from migrate_cron.worker.settings import WorkerSettings

    kind_list = tuple(k.strip() for k in (kinds or "").split(",") if k.strip())
    _import_modules(imports or [])
    reg = _load_registry(registry, bool(imports))
    if table is not None:
        from migrate_cron.errors import UsageError

        if kind_list or any_kind or metrics_port is not None:
            raise UsageError(
                "--table claims rows of one table: leave out --kinds, --any-kind and --metrics-port"
            )
        spec = reg.table(table)
        table_settings = WorkerSettings(
            concurrency=concurrency,
            batch=batch if batch is not None else spec.batch,
            lease=lease if lease is not None else spec.lease,
            heartbeat=heartbeat,
            grace=grace,
            once=once,
            poll=poll,
        )
        _run_table_worker(reg, spec, table_settings, database_url, table_prefix, json_logs)
        return
    catalog = Catalog.build(reg, kind_list or None)
    settings = WorkerSettings(
        concurrency=concurrency,
        batch=batch,
        lease=lease,
        heartbeat=heartbeat,
        grace=grace,
        once=once,
        kinds=kind_list,
        any_kind=any_kind,
        poll=poll,
    )
    catalog = replace(catalog, output_cap=settings.output_cap, kill_grace=settings.kill_grace)
    store = open_store(database_url, table_prefix, Use.LOOP)
    log = WorkerLog(json_lines=json_logs)
    notifier = Notifier(reg.notify, reg.jobs, log.event, store.previous_outcome)
    w = Worker(store, catalog, settings, log=log, notifier=notifier, metrics=notifier.registry)
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, registry=notifier.registry)
    _run_until_stopped(w, settings, store.dispose)


def _run_table_worker(
    reg: Registry,
    spec: TableSpec,
    settings: WorkerSettings,
    database_url: str,
    table_prefix: str,
    json_logs: bool,
) -> None:
    """``worker --table``: the same loop on a ``RowQueue``; no notifier (a row has no MAILTO)
    and no history (the row keeps its ``last_error``)."""
    from migrate_cron.cli.common import open_store
    from migrate_cron.store.row_queue import RowQueue
    from migrate_cron.store.timeouts import Use
    from migrate_cron.worker.catalog import Catalog
    from migrate_cron.worker.log import WorkerLog
    from migrate_cron.worker.loop import Worker

    catalog = Catalog.for_table(
        reg, spec, output_cap=settings.output_cap, kill_grace=settings.kill_grace
    )
    store = open_store(database_url, table_prefix, Use.LOOP)
    rows = RowQueue(store, spec)
    try:
        rows.check()
    except BaseException:
        store.dispose()
        raise
    w = Worker(rows, catalog, settings, log=WorkerLog(json_lines=json_logs))
    _run_until_stopped(w, settings, store.dispose)


def _run_until_stopped(w: Worker, settings: WorkerSettings, dispose: Callable[[], None]) -> None:
    """Run ``w`` with SIGTERM/SIGINT wired to a graceful stop, bounded in time."""
    from migrate_cron.logline import route_library_logs
    from migrate_cron.store.dialects import driver_loggers

    route_library_logs(w.log.event, driver_loggers())
    bound = settings.grace + settings.kill_grace + SHUTDOWN_SLACK

    armed: list[bool] = []  # a plain list: a handler must not take an Event's lock

    def on_signal(_signum: int, _frame: object) -> None:
        threading.Thread(target=w.request_stop, daemon=True).start()
        if not armed:
            armed.append(True)
            _exit_after(bound, w.log)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        summary = w.run()
    finally:
        dispose()
    if summary.abandoned:
        # Handler threads that ignored the stop still run; their jobs are released. Leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


#: Seconds past grace + kill grace that a stopping worker may take to write its last outcomes
#: and release what is left; after that it exits even if the database does not answer (its
#: leases then simply expire and the reaper returns the jobs).
SHUTDOWN_SLACK = 10.0


def _exit_after(seconds: float, log: WorkerLog) -> None:
    """Arm the hard bound on shutdown: a frozen database call cannot keep the process."""

    def leave() -> None:
        log.event(
            "worker-exit",
            f"still stopping after {seconds:g}s (the database does not answer): exiting now; "
            "unfinished jobs come back when their leases expire",
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(seconds, leave)
    timer.daemon = True
    timer.start()


def _import_modules(modules: list[str]) -> None:
    """Import the application's handler modules, from the current directory like ``python -m``."""
    import importlib

    from migrate_cron.errors import UsageError

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise UsageError(f"--import {name}: {type(exc).__name__}: {exc}") from None


def _load_registry(path: str, have_imports: bool):  # type: ignore[no-untyped-def]
    """The registry file; without one, decorated handlers alone (when --import was given)."""
    from migrate_cron.registry import Registry, load_registry

    if have_imports and not Path(path).exists():
        return Registry(path, {})
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # registry handlers are imported like --import modules
    # An entry's error is that entry's: the worker runs the rest and says which it leaves.
    return load_registry(path, partial=True)
