"""Where a job's notifications go and on which events: parsed from the registry.

A target is ``mail:ADDR``, ``webhook:URL`` or ``command:SHELL COMMAND``. A job without a
``notify`` key gets cron's rule: mail to the addresses of its ``MAILTO`` env line, none for
``MAILTO=""``, and with no ``MAILTO`` mail to the user it runs as — through the local
``sendmail`` only, as cron does (no MTA on the host: cron discards it, and so do we).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from migrate_cron.vocabulary import DEFAULT_NOTIFY_EVENTS, NotifyEvent

#: The final attempt failed (the default); an attempt failed and will be retried; the run
#: printed something (cron mailed any output); the first success after a failure.
EVENTS = tuple(NotifyEvent)
DEFAULT_EVENTS = DEFAULT_NOTIFY_EVENTS
KINDS = ("mail", "webhook", "command")
#: The addressee when a job has no MAILTO: its user's local mailbox.
LOCAL_USER = ""


@dataclass(frozen=True)
class Target:
    kind: str  # mail | webhook | command
    value: str  # an address (LOCAL_USER: the job's user), a URL, a shell command

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.value or 'local user'}"


@dataclass(frozen=True)
class NotifySettings:
    """The registry's ``[notify]`` table: how mail leaves the host."""

    smtp: str | None = None  # smtp://host:port or smtps://host:port; None: /usr/sbin/sendmail
    sender: str | None = None  # From: (default migrate-cron@HOSTNAME)
    timeout: float = 10.0  # seconds per delivery attempt
    sendmail: str = "/usr/sbin/sendmail"


def parse_target(text: str) -> Target:
    """``mail:ADDR`` / ``webhook:URL`` / ``command:CMD``; ValueError says what is wrong."""
    kind, sep, value = text.partition(":")
    if not sep or kind not in KINDS or not value.strip():
        raise ValueError(f"{text!r} is not mail:ADDRESS, webhook:URL or command:COMMAND")
    if kind == "webhook":
        url = urlsplit(value)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ValueError(f"{text!r}: a webhook is an http:// or https:// URL")
        if url.password:
            raise ValueError(f"{text!r}: no password in the URL (the registry is not a secret)")
    if kind == "mail" and not re.fullmatch(r"[^\s,<>]+", value):
        raise ValueError(f"{text!r}: one address per target")
    return Target(kind, value)


def mailto_targets(env: Mapping[str, str]) -> tuple[Target, ...]:
    """Cron's rule from a job's env: one mail to MAILTO's addresses, none for an empty
    MAILTO, and the job's own user when there is no MAILTO."""
    if "MAILTO" not in env:
        return (Target("mail", LOCAL_USER),)
    addresses = [a for a in re.split(r"[,\s]+", env["MAILTO"]) if a]
    return (Target("mail", ", ".join(addresses)),) if addresses else ()


def parse_targets(raw: Sequence[Any] | None, env: Mapping[str, str]) -> tuple[Target, ...]:
    if raw is None:
        return mailto_targets(env)
    return tuple(parse_target(str(item)) for item in raw)


def parse_events(raw: Sequence[Any] | None) -> tuple[NotifyEvent, ...]:
    if raw is None:
        return DEFAULT_EVENTS
    events = tuple(str(e) for e in raw)
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: events are {', '.join(EVENTS)}")
    return tuple(NotifyEvent(e) for e in events)


def parse_settings(raw: Mapping[str, Any]) -> NotifySettings:
    """The ``[notify]`` table; a password in the SMTP URL is refused (it comes from the
    environment: MIGRATE_CRON_SMTP_USER / MIGRATE_CRON_SMTP_PASSWORD)."""
    unknown = set(raw) - {"smtp", "from", "timeout", "sendmail"}
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}: use smtp, from, timeout, sendmail")
    smtp = raw.get("smtp")
    if smtp is not None:
        url = urlsplit(str(smtp))
        if url.scheme not in ("smtp", "smtps") or not url.hostname:
            raise ValueError(f"smtp = {smtp!r}: use smtp://HOST:PORT or smtps://HOST:PORT")
        if url.password or url.username:
            raise ValueError(
                "smtp: no user or password in the registry; set MIGRATE_CRON_SMTP_USER and "
                "MIGRATE_CRON_SMTP_PASSWORD in the worker's environment"
            )
    timeout = raw.get("timeout", 10.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 300:
        raise ValueError("timeout: a number of seconds from 0 to 300")
    return NotifySettings(
        smtp=str(smtp) if smtp else None,
        sender=str(raw["from"]) if raw.get("from") else None,
        timeout=float(timeout),
        sendmail=str(raw.get("sendmail", "/usr/sbin/sendmail")),
    )
