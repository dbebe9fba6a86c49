"""Who may change the queue from a browser, and the record of every change.

The dashboard is read-only unless started with ``--allow-actions``; then a person signs in
once with ``MIGRATE_CRON_WEB_TOKEN`` (compared with ``hmac.compare_digest``, so the time taken
says nothing about how much of a guess was right) and gets a session cookie signed with a
secret that lives only in this process (a restart signs everyone out). Signing out revokes the
session in this process, not only in the browser: a copy of the cookie taken before is refused
from then on (the revoked ids are kept until the session would have expired anyway, so the
list stays as small as the sessions of the last ``SESSION_AGE``). Every action is a POST
that carries the session's CSRF token — an HMAC of the session id, so another site can
neither read it nor forge it — and is written to the action log with who and what.

Nothing a request sends is ever run: an action names job ids (integers) or a kind, and calls
the same Store operations as ``jobs retry`` / ``jobs cancel``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

SESSION_COOKIE = "mc_session"
#: A session lasts this long (seconds); signing in again starts a new one.
SESSION_AGE = 12 * 3600
#: Shorter tokens are refused at start-up: the token is the only thing between a browser
#: and the queue's retry/cancel.
MIN_TOKEN_LENGTH = 16
#: Ids one action may name (the Failed page shows 100 per page).
MAX_IDS = 1000


class Refused(Exception):
    """A request the guard turns down; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Session:
    sid: str
    who: str


@dataclass(frozen=True)
class Guard:
    """The action policy of one server process."""

    allow_actions: bool
    token: str | None
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    #: Seconds since the epoch; injected by tests that age a session.
    clock: Callable[[], float] = time.time
    #: Signed-out session ids and when each would have expired (seconds since the epoch).
    _revoked: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ sign in
    def sign_in(self, given: str, who: str) -> str:
        """The cookie value for a new session, if ``given`` is the token."""
        self._actions_on()
        if not hmac.compare_digest(given.encode(), (self.token or "").encode()):
            raise Refused(403, "wrong token")
        sid = secrets.token_urlsafe(18)
        name = base64.urlsafe_b64encode(who.encode()).decode().rstrip("=")
        body = f"{sid}.{name}.{int(self.clock())}"
        return f"{body}.{self._sign('session', body)}"

    def session(self, cookie: str | None) -> Session | None:
        """The session a cookie proves, or None (absent, forged or from an old process)."""
        if not cookie or not self.allow_actions:
            return None
        parts = cookie.split(".")
        if len(parts) != 4:
            return None
        sid, name, issued, mac = parts
        if not hmac.compare_digest(mac, self._sign("session", f"{sid}.{name}.{issued}")):
            return None
        if not issued.isdigit() or self.clock() - int(issued) > SESSION_AGE:
            return None
        if sid in self._revoked:
            return None
        try:
            who = base64.urlsafe_b64decode(name + "=" * (-len(name) % 4)).decode()
        except ValueError:
            return None
        return Session(sid, who)

    def sign_out(self, session: Session) -> None:
        """Refuse this session's cookie from now on, wherever a copy of it is."""
        now = self.clock()
        for sid, until in list(self._revoked.items()):
            if until < now:
                del self._revoked[sid]
        self._revoked[session.sid] = now + SESSION_AGE

    def csrf(self, session: Session) -> str:
        return self._sign("csrf", session.sid)

    # ------------------------------------------------------------------ actions
    def authorise(self, session: Session | None, csrf: str | None) -> Session:
        """The session allowed to act, or ``Refused`` (read-only, not signed in, bad CSRF)."""
        self._actions_on()
        if session is None:
            raise Refused(401, "sign in with the token (MIGRATE_CRON_WEB_TOKEN) first")
        if not csrf or not hmac.compare_digest(csrf, self.csrf(session)):
            raise Refused(403, "missing or wrong CSRF token: reload the page and try again")
        return session

    def _actions_on(self) -> None:
        if not self.allow_actions or not self.token:
            raise Refused(403, "read-only dashboard: start it with --allow-actions to act")

    def _sign(self, purpose: str, value: str) -> str:
        mac = hmac.new(self.secret, f"{purpose}:{value}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def parse_ids(values: list[str]) -> list[int]:
    """Job ids from a form: positive integers only, at most ``MAX_IDS``."""
    ids: list[int] = []
    for value in values:
        if not value.isdigit() or int(value) < 1:
            raise Refused(400, f"not a job id: {value[:40]!r}")
        ids.append(int(value))
    if len(ids) > MAX_IDS:
        raise Refused(400, f"at most {MAX_IDS} jobs per action")
    return sorted(set(ids))


@dataclass
class ActionLog:
    """One line per action, in the format of the worker's and scheduler's logs
    (``logline``): who (the name given at sign-in, the client address, the session), what,
    and how many jobs changed."""

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    #: The newest lines, for tests and the page footer (bounded: the server runs for months).
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=200))

    def write(self, action: str, session: Session, client: str, **what: object) -> None:
        fields: dict[str, object] = {
            "who": session.who or "-",
            "client": client,
            "session": session.sid[:8],
        }
        fields.update(what)
        self._emit(f"web.{action}", fields)

    def refused(self, what: str, client: str, **why: object) -> None:
        """A refused sign-in or action: a token being guessed shows in the log."""
        self._emit("web.refused", {"what": what, "client": client, **why})

    def _emit(self, event: str, fields: dict[str, object]) -> None:
        from migrate_cron.logline import format_line

        line = format_line(event, fields, json_lines=False)
        self.lines.append(line)
        self.stream.write(line + "\n")
        self.stream.flush()
