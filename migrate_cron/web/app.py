"""The dashboard's ASGI app: routes, templates, and the guard in front of every action.

``create_app`` builds everything a server process needs from a ``WebConfig`` and keeps it on
``app.state`` (no module globals: a test builds as many apps as it likes, each with its own
store, secret and log). Pages are plain functions (Starlette runs them in its thread pool, so
the store's blocking calls never stall the event loop); the two actions are POST only (a GET
gets 405 from the router) and go through ``Guard.authorise`` before touching the store.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from migrate_cron.config import mask_url
from migrate_cron.errors import MigrateCronError
from migrate_cron.store.models import JobState
from migrate_cron.web import pages
from migrate_cron.web.chart import Bar, bars
from migrate_cron.web.guard import SESSION_AGE, SESSION_COOKIE, ActionLog, Guard, Refused, Session

if TYPE_CHECKING:
    from migrate_cron.store import Store

HERE = Path(__file__).resolve().parent
#: Pages an action may send the browser back to (never a URL taken from the request).
BACK = re.compile(r"/(failed|jobs/\d+)")
WINDOWS = ("1h", "24h", "7d")
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


@dataclass(frozen=True)
class WebConfig:
    database_url: str
    table_prefix: str = ""
    #: The registry file; None finds ``migrate-cron.toml`` like the CLI does.
    registry: str | None = None
    allow_actions: bool = False
    token: str | None = None
    #: The overview's default window for done counts and run times (seconds).
    window: float = 3600.0
    #: Seconds between the pages' refreshes (0: off).
    refresh: float = 5.0
    log: ActionLog = field(default_factory=ActionLog)


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
    templates.env.filters.update(duration=_duration, at=_at, ago=_ago)
    app = Starlette(
        routes=[
            Route("/", overview),
            Route("/failed", failed),
            Route("/jobs/{job_id:int}", job),
            Route("/schedules", schedules),
            Route("/migration", migration),
            Route("/workers", workers),
            Route("/login", login_form, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/actions/retry", retry, methods=["POST"]),
            Route("/actions/cancel", cancel, methods=["POST"]),
            Route("/healthz", healthz),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ],
        exception_handlers={MigrateCronError: _database_error, Refused: _refused},
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


# ---------------------------------------------------------------------- pages
def overview(request: Request) -> Response:
    from migrate_cron.ops.durations import parse_duration

    config: WebConfig = request.app.state.config
    given = request.query_params.get("window")
    try:
        window = parse_duration(given, option="window") if given else config.window
    except MigrateCronError as exc:
        raise Refused(400, str(exc)) from None
    if window <= 0:
        raise Refused(400, "window: must be longer than 0s")
    data = pages.overview(_store(request), _registry(request), window)
    kinds = data.report.kinds
    p50_p95 = "run time p50 / p95"
    done = "done in the window"
    charts = [
        (
            p50_p95,
            bars(
                p50_p95,
                [
                    Bar(k.kind, (k.duration_p50, k.duration_p95), _duration(k.duration_p95))
                    for k in kinds
                    if k.duration_p95 is not None
                ],
                ("p50", "p95"),
            ),
        ),
        (
            done,
            bars(
                done,
                [Bar(k.kind, (float(k.done),), str(k.done)) for k in kinds if k.done],
                ("done",),
            ),
        ),
    ]
    return _render(
        request,
        "overview.html",
        "Overview",
        data=data,
        charts=charts,
        windows=WINDOWS,
        window=given or _duration(config.window),
    )


def failed(request: Request) -> Response:
    kind = request.query_params.get("kind") or None
    after = _int(request.query_params.get("after"))
    shelf = pages.failed(_store(request), kind, after)
    return _render(
        request, "failed.html", "Failed", shelf=shelf, tail=pages.output_tail, done=_done(request)
    )


def job(request: Request) -> Response:
    job_id = int(request.path_params["job_id"])
    detail = pages.job_detail(_store(request), _registry(request), job_id)
    if detail is None:
        raise Refused(404, f"no job with id {job_id}")
    import json

    payload = json.dumps(detail.job.payload, indent=2, ensure_ascii=False, default=str)
    return _render(
        request,
        "job.html",
        f"Job {job_id}",
        detail=detail,
        payload=payload,
        retryable=detail.job.state in (JobState.FAILED, JobState.CANCELLED),
        cancellable=detail.job.state in (JobState.OPEN, JobState.RUNNING, JobState.FAILED),
        done=_done(request),
    )


def schedules(request: Request) -> Response:
    rows = pages.schedules(_store(request), _registry(request))
    return _render(request, "schedules.html", "Schedules", rows=rows)


def migration(request: Request) -> Response:
    store = _store(request)
    board = pages.migration(store, _registry(request), datetime.now(UTC))
    return _render(request, "migration.html", "Migration", board=board)


def workers(request: Request) -> Response:
    board = pages.workers(_store(request))
    return _render(request, "workers.html", "Workers", board=board)


def healthz(request: Request) -> Response:
    return PlainTextResponse("ok\n")


# ---------------------------------------------------------------------- sign in
def login_form(request: Request) -> Response:
    return _render(request, "login.html", "Sign in", problem=None)


async def login(request: Request) -> Response:
    guard: Guard = request.app.state.guard
    form = await request.form()
    who = str(form.get("who") or "").strip()[:60]
    try:
        cookie = guard.sign_in(str(form.get("token") or ""), who)
    except Refused as exc:
        _log(request).refused("sign-in", _client(request), who=who or "-", reason=exc.message)
        return _render(request, "login.html", "Sign in", status=exc.status, problem=exc.message)
    response = RedirectResponse("/failed", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        max_age=SESSION_AGE,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def logout(request: Request) -> Response:
    guard: Guard = request.app.state.guard
    session = guard.session(request.cookies.get(SESSION_COOKIE))
    if session is not None:
        guard.sign_out(session)
        _log(request).write("sign-out", session, _client(request))
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


# ---------------------------------------------------------------------- actions
async def retry(request: Request) -> Response:
    """Failed or cancelled jobs back to open (``jobs retry IDS``), or every failed job of a
    kind (``jobs retry --kind``)."""
    session, form = await _authorised(request)
    ids = _ids(form)
    kind = str(form.get("kind") or "") or None
    store = _store(request)
    if ids:
        states = (JobState.FAILED, JobState.CANCELLED)
        n = await run_in_threadpool(lambda: store.retry(ids, states=states))
        what: dict[str, object] = {"ids": ",".join(map(str, ids))}
    elif kind is not None:
        n = await run_in_threadpool(lambda: store.retry(None, kind=kind, states=(JobState.FAILED,)))
        what = {"kind": kind}
    else:
        raise Refused(400, "name the jobs to retry: tick some, or retry a kind")
    _log(request).write("retry", session, _client(request), **what, changed=n)
    return _back(form, "retried", n)


async def cancel(request: Request) -> Response:
    """Open, running or failed jobs to cancelled (``jobs cancel IDS``)."""
    session, form = await _authorised(request)
    ids = _ids(form)
    if not ids:
        raise Refused(400, "name the jobs to cancel: tick some")
    store = _store(request)
    n = await run_in_threadpool(lambda: store.cancel(ids))
    _log(request).write("cancel", session, _client(request), ids=",".join(map(str, ids)), changed=n)
    return _back(form, "cancelled", n)


async def _authorised(request: Request) -> tuple[Session, Any]:
    guard: Guard = request.app.state.guard
    session = guard.session(request.cookies.get(SESSION_COOKIE))
    form = await request.form()
    csrf = form.get("csrf")
    try:
        origin = request.headers.get("origin")
        if origin is not None and origin != _origin(request):
            raise Refused(403, f"cross-site request refused (from {origin[:80]})")
        return guard.authorise(session, csrf if isinstance(csrf, str) else None), form
    except Refused as exc:
        who = session.who if session else "-"
        _log(request).refused(request.url.path, _client(request), who=who, reason=exc.message)
        raise


def _ids(form: Any) -> list[int]:
    from migrate_cron.web.guard import parse_ids

    return parse_ids([str(v) for v in form.getlist("id")])


def _back(form: Any, verb: str, n: int) -> Response:
    back = str(form.get("back") or "/failed")
    if not BACK.fullmatch(back):
        back = "/failed"
    return RedirectResponse(f"{back}?{verb}={n}", status_code=303)


# ---------------------------------------------------------------------- helpers
def _render(
    request: Request, template: str, title: str, *, status: int = 200, **context: Any
) -> Response:
    config: WebConfig = request.app.state.config
    guard: Guard = request.app.state.guard
    session = guard.session(request.cookies.get(SESSION_COOKIE))
    store = _store(request)
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(
        request,
        template,
        {
            "title": title,
            "database": mask_url(store.url_safe),
            "actions": config.allow_actions,
            "session": session,
            "csrf": guard.csrf(session) if session else "",
            "refresh": config.refresh,
            "path": request.url.path,
            **context,
        },
        status_code=status,
    )


def _database_error(request: Request, exc: Exception) -> Response:
    """503 while the database is away or not set up (a refresh may find it back); 500 for
    another error of ours (an invalid registry file: its message says where)."""
    from migrate_cron.errors import DatabaseUnavailable, SchemaMissing

    status = 503 if isinstance(exc, DatabaseUnavailable | SchemaMissing) else 500
    return _problem(request, status, mask_url(str(exc)))


def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return _problem(request, exc.status, exc.message)


def _problem(request: Request, status: int, message: str) -> Response:
    try:
        return _render(request, "problem.html", "Problem", status=status, message=message)
    except MigrateCronError:
        return PlainTextResponse(message + "\n", status_code=status)


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _registry(request: Request) -> Any:
    config: WebConfig = request.app.state.config
    return pages.load(config.registry)


def _log(request: Request) -> ActionLog:
    log: ActionLog = request.app.state.log
    return log


def _client(request: Request) -> str:
    return request.client.host if request.client else "-"


def _origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _done(request: Request) -> str | None:
    """What the last action did, from the redirect's own counters (never echoed text)."""
    for verb in ("retried", "cancelled"):
        n = _int(request.query_params.get(verb))
        if n is not None:
            return f"{verb} {n} job{'s' if n != 1 else ''}"
    return None


# ---------------------------------------------------------------------- filters
def _duration(seconds: float | None) -> str:
    from migrate_cron.ops.durations import format_duration

    return format_duration(seconds) if seconds is not None else "-"


def _at(when: datetime | None) -> str:
    return f"{when:%Y-%m-%d %H:%M:%S}Z" if when is not None else "-"


def _ago(when: datetime | None, now: datetime | None = None) -> str:
    if when is None:
        return "-"
    now = now or datetime.now(UTC)
    return f"{_duration(max(0.0, (now - when).total_seconds()))} ago"
