"""What every page and action of the dashboard shares: rendering a template with the
common context, the error pages, what the app keeps on ``app.state``, and the templates'
filters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.templating import Jinja2Templates

from migrate_cron.config import mask_url
from migrate_cron.errors import MigrateCronError
from migrate_cron.web import pages
from migrate_cron.web.guard import SESSION_COOKIE, ActionLog, Guard, Refused
from migrate_cron.web.settings import WebConfig

if TYPE_CHECKING:
    from migrate_cron.store import Store
    from migrate_cron.store.actions import Actor
    from migrate_cron.web.guard import Session


def render(
    request: Request, template: str, title: str, *, status: int = 200, **context: Any
) -> Response:
    config: WebConfig = request.app.state.config
    guard: Guard = request.app.state.guard
    session = guard.session(request.cookies.get(SESSION_COOKIE))
    store = store_of(request)
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


def database_error(request: Request, exc: Exception) -> Response:
    """503 while the database is away or not set up (a refresh may find it back); 500 for
    another error of ours (an invalid registry file: its message says where)."""
    from migrate_cron.errors import DatabaseUnavailable, SchemaMissing

    status = 503 if isinstance(exc, DatabaseUnavailable | SchemaMissing) else 500
    return problem(request, status, mask_url(str(exc)))


def refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return problem(request, exc.status, exc.message)


def problem(request: Request, status: int, message: str) -> Response:
    try:
        return render(request, "problem.html", "Problem", status=status, message=message)
    except MigrateCronError:
        return PlainTextResponse(message + "\n", status_code=status)


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def registry_of(request: Request) -> Any:
    config: WebConfig = request.app.state.config
    return pages.load(config.registry)


def action_log(request: Request) -> ActionLog:
    log: ActionLog = request.app.state.log
    return log


def client(request: Request) -> str:
    return request.client.host if request.client else "-"


def actor_of(request: Request, session: Session) -> Actor:
    """Who the action log records: the name given at sign-in, from the client's address."""
    from migrate_cron.store.actions import Actor

    return Actor(session.who or "-", client(request))


def own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


def int_param(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


#: What a redirect's counter says when it is 0 and when it is not (``{n}``: the number).
SAID = {
    "retried": ("retried 0 jobs", "retried {n} job(s)"),
    "cancelled": ("cancelled 0 jobs", "cancelled {n} job(s)"),
    "started": ("", "started job {n}"),
    "paused": ("it was already paused", "paused"),
    "resumed": ("it was not paused", "resumed"),
}


def last_action(request: Request) -> str | None:
    """What the last action did, from the redirect's own counters (never echoed text)."""
    for verb, (none, some) in SAID.items():
        n = int_param(request.query_params.get(verb))
        if n is not None:
            if some.endswith("job(s)"):
                some = some.replace("job(s)", "job" if n == 1 else "jobs")
            return some.format(n=n) if n else none
    return None


def duration(seconds: float | None) -> str:
    from migrate_cron.ops.durations import format_duration

    return format_duration(seconds) if seconds is not None else "-"


def timestamp(when: datetime | None) -> str:
    return f"{when:%Y-%m-%d %H:%M:%S}Z" if when is not None else "-"


def ago(when: datetime | None, now: datetime | None = None) -> str:
    if when is None:
        return "-"
    now = now or datetime.now(UTC)
    return f"{duration(max(0.0, (now - when).total_seconds()))} ago"
