"""``migrate-cron metrics``: a Prometheus endpoint computed from the queue at scrape time."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from migrate_cron.cli.common import (
    DatabaseUrl,
    OptionalRegistry,
    SinceAlias,
    TablePrefix,
    WindowOption,
    window_seconds,
)
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL


def register(app: typer.Typer) -> None:
    app.command("metrics")(metrics)


def metrics(
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="TCP port (0: pick a free one).")
    ] = 9464,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (0.0.0.0 for all interfaces).")
    ] = "127.0.0.1",
    window: WindowOption = None,
    since: SinceAlias = None,
    registry: OptionalRegistry = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """Serve Prometheus metrics computed from the queue at scrape time.

    Per kind: oldest ready age, failed jobs, duration quantiles, jobs per
    state; per scheduled job: scheduling lag and next slot. Runs until Ctrl-C
    or SIGTERM.
    """
    import signal
    import threading

    from prometheus_client import start_http_server

    from migrate_cron.cli.common import open_store, optional_registry
    from migrate_cron.errors import MigrateCronError
    from migrate_cron.metrics import metrics_registry

    seconds = window_seconds(window, since)
    specs = optional_registry(registry)
    store = open_store(database_url, table_prefix)
    stop = threading.Event()
    try:
        try:
            server, thread = start_http_server(
                port, addr=host, registry=metrics_registry(store, seconds, specs)
            )
        except OSError as exc:
            raise MigrateCronError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            ) from None
        bound = server.server_address[1]
        url_host = f"[{host}]" if ":" in host else host
        # Plain text, one line, flushed: supervisors and tests read the bound port from it.
        sys.stderr.write(
            f"serving metrics on http://{url_host}:{bound}/metrics (database {store.url_safe})\n"
        )
        sys.stderr.flush()
        # stop.set() from another thread: in the handler itself it deadlocks if the signal
        # lands while the main thread holds the Event's lock (entering/leaving stop.wait).
        signal.signal(
            signal.SIGTERM,
            lambda *_: threading.Thread(target=stop.set, daemon=True).start(),
        )
        try:
            while not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    finally:
        store.dispose()
