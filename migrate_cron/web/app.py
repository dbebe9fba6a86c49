"""The dashboard's ASGI app: its routes, its templates, and the headers on every response.

``create_app`` builds everything a server process needs from a ``WebConfig`` and keeps it on
``app.state`` (no module globals: a test builds as many apps as it likes, each with its own
store, secret and log). Pages (``views.py``) are plain functions (Starlette runs them in its
thread pool, so the store's blocking calls never stall the event loop); the actions
(``actions.py``) are POST only (a GET gets 405 from the router) and go through
``Guard.authorise`` before touching the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from migrate_cron.errors import MigrateCronError
from migrate_cron.web.actions import (
    cancel,
    login,
    login_form,
    logout,
    pause,
    resume,
    retry,
    retry_failed,
    run_now,
)
from migrate_cron.web.guard import Guard, Refused
from migrate_cron.web.render import ago, database_error, duration, refused, timestamp
from migrate_cron.web.settings import WebConfig
from migrate_cron.web.views import (
    failed,
    healthz,
    job,
    jobs,
    kind,
    migration,
    overview,
    retry_failed_form,
    schedules,
    workers,
)

if TYPE_CHECKING:
    from migrate_cron.store import Store

__all__ = ["WebConfig", "create_app"]

HERE = Path(__file__).resolve().parent
HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    # Not no-referrer: with it browsers send ``Origin: null`` on a form POST, and the
    # action's same-origin check could not tell our own form from a sandboxed foreign one.
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def create_app(config: WebConfig, store: Store | None = None) -> Starlette:
    """The app for one server process; the store is disposed when it shuts down."""
    from migrate_cron.store.opening import open_for_person

    own = store or open_for_person(config.database_url, config.table_prefix)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if store is None:
                own.dispose()

    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters.update(duration=duration, at=timestamp, ago=ago)
    app = Starlette(
        routes=[
            Route("/", overview),
            Route("/failed", failed),
            Route("/jobs", jobs),
            Route("/jobs/{job_id:int}", job),
            Route("/kinds/{kind}", kind),
            Route("/kinds/{kind}/retry-failed", retry_failed_form, methods=["GET"]),
            Route("/schedules", schedules),
            Route("/migration", migration),
            Route("/workers", workers),
            Route("/login", login_form, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/actions/retry", retry, methods=["POST"]),
            Route("/actions/cancel", cancel, methods=["POST"]),
            Route("/actions/run-now", run_now, methods=["POST"]),
            Route("/actions/pause", pause, methods=["POST"]),
            Route("/actions/resume", resume, methods=["POST"]),
            Route("/actions/retry-failed", retry_failed, methods=["POST"]),
            Route("/healthz", healthz),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ],
        exception_handlers={MigrateCronError: database_error, Refused: refused},
        lifespan=lifespan,
    )
    app.state.store = own
    app.state.config = config
    app.state.guard = Guard(config.allow_actions, config.token)
    app.state.log = config.log
    app.state.templates = templates
    app.add_middleware(SecurityHeaders)
    return app


class SecurityHeaders:
    """Every response forbids framing, sniffing, caching and any script or style from
    elsewhere (the pages use only their own two static files)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
