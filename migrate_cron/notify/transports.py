"""Delivering one event to one target, each within a bounded time; a failure raises
``DeliveryError`` with a reason fit for a log line (never the job's output)."""

from __future__ import annotations

import os
import smtplib
import ssl
import subprocess
import urllib.error
import urllib.request
from email.message import EmailMessage
from urllib.parse import urlsplit

from migrate_cron.notify.event import Event
from migrate_cron.registry.notify_targets import NotifySettings, Target

SMTP_USER_ENV = "MIGRATE_CRON_SMTP_USER"
SMTP_PASSWORD_ENV = "MIGRATE_CRON_SMTP_PASSWORD"
#: "0" turns STARTTLS off for a plain smtp:// server that offers it but has no usable cert.
SMTP_STARTTLS_ENV = "MIGRATE_CRON_SMTP_STARTTLS"


class DeliveryError(Exception):
    """A notification was not delivered; the message says why."""


def deliver(target: Target, event: Event, settings: NotifySettings) -> None:
    if target.kind == "mail":
        _mail(target, event, settings)
    elif target.kind == "webhook":
        _webhook(target.value, event, settings.timeout)
    else:
        _command(target.value, event, settings.timeout)


def _message(to: str, event: Event, settings: NotifySettings) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = settings.sender or f"migrate-cron@{event.host}"
    msg["To"] = to
    msg["Subject"] = event.subject
    msg["X-Migrate-Cron-Job"] = event.job
    msg.set_content(event.body())
    return msg


def _mail(target: Target, event: Event, settings: NotifySettings) -> None:
    to = target.value or event.user or _me()
    msg = _message(to, event, settings)
    if settings.smtp is None:
        _sendmail(msg, settings)
        return
    url = urlsplit(settings.smtp)
    host, port = url.hostname or "localhost", url.port
    try:
        if url.scheme == "smtps":
            client: smtplib.SMTP = smtplib.SMTP_SSL(
                host, port or 465, timeout=settings.timeout, context=ssl.create_default_context()
            )
        else:
            client = smtplib.SMTP(host, port or 25, timeout=settings.timeout)
        with client:
            client.ehlo()
            if (
                url.scheme == "smtp"
                and client.has_extn("starttls")
                and os.environ.get(SMTP_STARTTLS_ENV) != "0"
            ):
                client.starttls(context=ssl.create_default_context())
                client.ehlo()
            user = os.environ.get(SMTP_USER_ENV)
            if user:
                client.login(user, os.environ.get(SMTP_PASSWORD_ENV, ""))
            client.send_message(msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise DeliveryError(f"smtp {host}:{port}: {type(exc).__name__}: {exc}") from None


def _sendmail(msg: EmailMessage, settings: NotifySettings) -> None:
    try:
        done = subprocess.run(
            [settings.sendmail, "-t", "-oi"],
            input=msg.as_bytes(),
            capture_output=True,
            timeout=settings.timeout,
            check=False,
        )
    except FileNotFoundError:
        raise DeliveryError(f"{settings.sendmail} not found (no MTA on this host)") from None
    except subprocess.TimeoutExpired:
        raise DeliveryError(f"{settings.sendmail} took over {settings.timeout:g}s") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise DeliveryError(f"{settings.sendmail} exited {done.returncode}: {err}")


def _webhook(url: str, event: Event, timeout: float) -> None:
    request = urllib.request.Request(
        url,
        data=event.to_json(),
        headers={"Content-Type": "application/json", "User-Agent": "migrate-cron"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        raise DeliveryError(f"webhook {_safe(url)}: HTTP {exc.code}") from None
    except (OSError, urllib.error.URLError) as exc:
        raise DeliveryError(f"webhook {_safe(url)}: {exc}") from None
    if status >= 300:
        raise DeliveryError(f"webhook {_safe(url)}: HTTP {status}")


def _command(command: str, event: Event, timeout: float) -> None:
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=event.to_json(),
            capture_output=True,
            timeout=timeout,
            check=False,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        raise DeliveryError(f"command took over {timeout:g}s") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise DeliveryError(f"command exited {done.returncode}: {err}")


def _safe(url: str) -> str:
    """A URL for a log line: scheme, host and path, no query (tokens live there)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


def _me() -> str:
    import getpass

    return getpass.getuser()
