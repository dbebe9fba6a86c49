"""The dashboard's writes: signing in and out, and the actions — retry, cancel, run now,
pause, resume, retry every failed job of a kind — each authorised by the guard (session,
CSRF token, same origin), written to the log on stderr, and recorded in the database's action
log by the store operation that acts (in the same transaction where it can: ``store/actions.py``).

Retrying every failed job of a kind is confirmed first (``views.retry_failed_form``: "retry N
failed jobs of KIND?"); the confirmation carries the N the person saw. When more jobs have failed
since, nothing is retried and the confirmation is shown again with the new number (409): a
person agrees to a number, not to whatever the kind holds by the time the form arrives. When
as many or fewer are failed (some were retried or cancelled meanwhile) they are retried and
the kind page says how many."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from migrate_cron.vocabulary import RETRYABLE_STATES, JobState
from migrate_cron.web.guard import SESSION_AGE, SESSION_COOKIE, Guard, Refused, Session
from migrate_cron.web.render import (
    action_log,
    actor_of,
    client,
    own_origin,
    registry_of,
    render,
    store_of,
)
from migrate_cron.web.views import retry_failed_page

#: Pages an action may send the browser back to (never a URL taken from the request).
BACK = re.compile(r"/(failed|jobs/\d+|kinds/[a-z0-9._~%-]{1,600})", re.IGNORECASE)
#: Longest kind an action names (the ``kind`` column's width).
KIND_WIDTH = 200


def login_form(request: Request) -> Response:
    return render(request, "login.html", "Sign in", problem=None)


async def login(request: Request) -> Response:
    guard: Guard = request.app.state.guard
    form = await request.form()
    who = str(form.get("who") or "").strip()[:60]
    try:
        cookie = guard.sign_in(str(form.get("token") or ""), who)
    except Refused as exc:
        action_log(request).refused("sign-in", client(request), who=who or "-", reason=exc.message)
        return render(request, "login.html", "Sign in", status=exc.status, problem=exc.message)
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
        action_log(request).write("sign-out", session, client(request))
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
    store = store_of(request)
    actor = actor_of(request, session)
    if ids:
        n = await run_in_threadpool(lambda: store.retry(ids, states=RETRYABLE_STATES, actor=actor))
        what: dict[str, object] = {"ids": ",".join(map(str, ids))}
    elif kind is not None:
        n = await run_in_threadpool(
            lambda: store.retry(None, kind=kind, states=(JobState.FAILED,), actor=actor)
        )
        what = {"kind": kind}
    else:
        raise Refused(400, "name the jobs to retry: tick some, or retry a kind")
    action_log(request).write("retry", session, client(request), **what, changed=n)
    return _back(form, "retried", n)


async def cancel(request: Request) -> Response:
    """Open, running or failed jobs to cancelled (``jobs cancel IDS``)."""
    session, form = await _authorised(request)
    ids = _ids(form)
    if not ids:
        raise Refused(400, "name the jobs to cancel: tick some")
    store = store_of(request)
    actor = actor_of(request, session)
    n = await run_in_threadpool(lambda: store.cancel(ids, actor=actor))
    action_log(request).write(
        "cancel", session, client(request), ids=",".join(map(str, ids)), changed=n
    )
    return _back(form, "cancelled", n)


async def run_now(request: Request) -> Response:
    """A new job of a registry kind, due now (``jobs run KIND``): the registry's command and
    max_attempts, no payload (nothing a request sends is run)."""
    session, form = await _authorised(request)
    kind = _kind(form)
    registry = registry_of(request)
    spec = registry.jobs.get(kind) if registry is not None else None
    if spec is None:
        raise Refused(404, f"no job {kind!r} in the registry: run now starts a registry job")
    store, actor = store_of(request), actor_of(request, session)
    job_id = await run_in_threadpool(
        lambda: store.run_now(spec.name, None, max_attempts=spec.max_attempts, actor=actor)
    )
    action_log(request).write("run-now", session, client(request), kind=kind, job=job_id)
    return _to_kind(kind, "started", job_id)


async def pause(request: Request) -> Response:
    """Workers stop claiming the kind; the scheduler records no slot of it (``pause KIND``)."""
    return await _switch(request, on=True)


async def resume(request: Request) -> Response:
    """Lift a kind's pause (``resume KIND``)."""
    return await _switch(request, on=False)


async def _switch(request: Request, *, on: bool) -> Response:
    from datetime import UTC, datetime

    session, form = await _authorised(request)
    kind = _kind(form)
    store, actor = store_of(request), actor_of(request, session)
    by = f"{actor.who} from the console ({actor.origin}) {datetime.now(UTC):%Y-%m-%dT%H:%MZ}"
    changed = await run_in_threadpool(
        lambda: store.pause([kind], by, actor=actor) if on else store.resume([kind], actor=actor)
    )
    verb = "paused" if on else "resumed"
    action_log(request).write(verb, session, client(request), kind=kind, changed=len(changed))
    return _to_kind(kind, verb, len(changed))


async def retry_failed(request: Request) -> Response:
    """Every failed job of a kind back to open, once confirmed with the count seen (see the
    module docstring)."""
    session, form = await _authorised(request)
    kind = _kind(form)
    seen = str(form.get("seen") or "")
    if not seen.isdigit():
        raise Refused(400, "confirm how many failed jobs to retry (the confirmation page)")
    store, actor = store_of(request), actor_of(request, session)
    now = await run_in_threadpool(lambda: store.count_jobs(kind=kind, states=(JobState.FAILED,)))
    if now > int(seen):
        action_log(request).refused(
            request.url.path, client(request), who=session.who or "-", reason="count changed"
        )
        return retry_failed_page(request, kind, now, seen=int(seen), status=409)
    n = await run_in_threadpool(
        lambda: store.retry(None, kind=kind, states=(JobState.FAILED,), actor=actor)
    )
    action_log(request).write(
        "retry-failed", session, client(request), kind=kind, seen=seen, changed=n
    )
    return _to_kind(kind, "retried", n)


def _kind(form: Any) -> str:
    kind = str(form.get("kind") or "")
    if not kind or len(kind) > KIND_WIDTH or kind.startswith("@") or "/" in kind:
        raise Refused(400, f"not a job kind: {kind[:40]!r}")
    return kind


def _to_kind(kind: str, verb: str, n: int) -> Response:
    return RedirectResponse(f"/kinds/{quote(kind, safe='')}?{verb}={n}", status_code=303)


async def _authorised(request: Request) -> tuple[Session, Any]:
    guard: Guard = request.app.state.guard
    session = guard.session(request.cookies.get(SESSION_COOKIE))
    form = await request.form()
    csrf = form.get("csrf")
    try:
        origin = request.headers.get("origin")
        if origin is not None and origin != own_origin(request):
            raise Refused(403, f"cross-site request refused (from {origin[:80]})")
        return guard.authorise(session, csrf if isinstance(csrf, str) else None), form
    except Refused as exc:
        who = session.who if session else "-"
        action_log(request).refused(request.url.path, client(request), who=who, reason=exc.message)
        raise


def _ids(form: Any) -> list[int]:
    from migrate_cron.web.guard import parse_ids

    return parse_ids([str(v) for v in form.getlist("id")])


def _back(form: Any, verb: str, n: int) -> Response:
    back = str(form.get("back") or "/failed")
    if not BACK.fullmatch(back):
        back = "/failed"
    return RedirectResponse(f"{back}?{verb}={n}", status_code=303)
