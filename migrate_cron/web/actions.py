"""The dashboard's writes: signing in and out, and the retry and cancel actions, each
authorised by the guard (session, CSRF token, same origin) and written to the action log."""

from __future__ import annotations

import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from migrate_cron.vocabulary import RETRYABLE_STATES, JobState
from migrate_cron.web.guard import SESSION_AGE, SESSION_COOKIE, Guard, Refused, Session
from migrate_cron.web.render import action_log, client, own_origin, render, store_of

#: Pages an action may send the browser back to (never a URL taken from the request).
BACK = re.compile(r"/(failed|jobs/\d+)")


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
    if ids:
        n = await run_in_threadpool(lambda: store.retry(ids, states=RETRYABLE_STATES))
        what: dict[str, object] = {"ids": ",".join(map(str, ids))}
    elif kind is not None:
        n = await run_in_threadpool(lambda: store.retry(None, kind=kind, states=(JobState.FAILED,)))
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
    n = await run_in_threadpool(lambda: store.cancel(ids))
    action_log(request).write(
        "cancel", session, client(request), ids=",".join(map(str, ids)), changed=n
    )
    return _back(form, "cancelled", n)


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
