"""``migrate-cron web``: serve the dashboard (``migrate_cron.web``) with uvicorn.

Starlette, Jinja2 and uvicorn are imported only here, inside the command, and ship in the
``web`` extra: no other command pays for them, and a missing extra is one line that says
what to install.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Annotated

import typer

from migrate_cron.cli.common import (
    DatabaseUrl,
    OptionalRegistry,
    TablePrefix,
    WindowOption,
    reflow,
    window_seconds,
)
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

TOKEN_ENV = "MIGRATE_CRON_WEB_TOKEN"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def register(app: typer.Typer) -> None:
    app.command("web")(web)


def web(
    host: Annotated[
        str,
        typer.Option("--host", help="Address to listen on (another than 127.0.0.1 exposes it)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port.")] = 8080,
    allow_actions: Annotated[
        bool,
        typer.Option(
            "--allow-actions/--read-only",
            help=f"Let signed-in users retry and cancel jobs (sign-in needs {TOKEN_ENV}).",
        ),
    ] = False,
    window: WindowOption = None,
    refresh: Annotated[
        str, typer.Option("--refresh", help="Pages refresh in place this often (0: never).")
    ] = "5s",
    registry: OptionalRegistry = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """A dashboard in the browser: queue, failed jobs, schedules, the migration, workers.

    Read-only unless --allow-actions; then retry and cancel need a sign-in with the token
    in MIGRATE_CRON_WEB_TOKEN, are POST forms with a CSRF token, and are logged on stderr
    (who, what). Binds 127.0.0.1 unless --host says otherwise.
    """
    from migrate_cron.cli.common import info, settings
    from migrate_cron.errors import UsageError
    from migrate_cron.ops.durations import parse_duration

    token = os.environ.get(TOKEN_ENV) or None
    if allow_actions:
        from migrate_cron.web.guard import MIN_TOKEN_LENGTH

        if token is None:
            raise UsageError(f"--allow-actions needs a token: set {TOKEN_ENV}")
        if len(token) < MIN_TOKEN_LENGTH:
            raise UsageError(
                f"{TOKEN_ENV} is too short: use at least {MIN_TOKEN_LENGTH} characters"
            )
    seconds = window_seconds(window, None)
    every = parse_duration(refresh, option="--refresh")
    try:
        import uvicorn

        from migrate_cron.web.app import WebConfig, create_app
    except ImportError as exc:
        raise UsageError(
            f"the dashboard needs the web extra ({exc.name} is missing): "
            "pip install 'migrate-cron[web]'"
        ) from None
    s = settings(database_url, table_prefix)
    config = WebConfig(
        database_url=s.database_url,
        table_prefix=s.table_prefix,
        registry=registry,
        allow_actions=allow_actions,
        token=token if allow_actions else None,
        window=seconds,
        refresh=every,
    )
    app = create_app(config)
    if host not in LOOPBACK:
        info(
            f"[yellow]warning:[/yellow] listening on {host}: anyone who reaches it sees the "
            "queue (plain HTTP; put it behind TLS)"
        )
    sock = _listen(host, port)  # before the URL is printed: a busy port is one error line
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    mode = "actions allowed after sign-in" if allow_actions else "read-only"
    info(f"migrate-cron web on http://{shown}:{bound}/ ({mode}; {s.safe_url})")
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=bound, log_level="warning", access_log=False)
    )
    server.run(sockets=[sock])


def _listen(host: str, port: int) -> socket.socket:
    """Bind the port ourselves, as uvicorn would (SO_REUSEADDR), and hand uvicorn the socket:
    a port in use is then a MigrateCronError (one line, exit 1, as for ``metrics``) instead
    of uvicorn's log line and its exit 3 after the URL was already printed."""
    from migrate_cron.errors import MigrateCronError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        hint = "; choose another with --port" if exc.errno == errno.EADDRINUSE else ""
        raise MigrateCronError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}"
        ) from None
    sock.set_inheritable(True)
    return sock


web.__doc__ = reflow(web.__doc__)
