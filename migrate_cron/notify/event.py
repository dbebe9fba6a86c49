"""What one notification says: built from a finished job, sent as JSON (webhook, command)
or as a mail that reads like cron's."""

from __future__ import annotations

import json
import re
import socket
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from migrate_cron.vocabulary import NotifyEvent

#: How much of the job's output a notification carries (its end: where errors are).
OUTPUT_TAIL = 4000
_EXIT = re.compile(r"\bexit code (\d+)")


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a run ended, as the worker hands it to the notifier: plain values, so ``notify/``
    needs nothing of ``worker/`` (the worker imports the notifier, never the other way).
    A run given back unfinished (shutdown, a lost lease) is neither succeeded nor failed."""

    succeeded: bool
    failed: bool
    #: Failed, and no retry will be tried whatever the attempts left (a bad entry).
    terminal: bool = False
    error: str | None = None
    output: str | None = None


@dataclass(frozen=True)
class Event:
    event: str  # failed | retrying | output | recovered
    job: str  # the job's kind (the registry name)
    job_id: int
    slot: datetime | None
    attempt: int
    max_attempts: int
    exit_code: int | None
    duration: float
    error: str | None
    output_tail: str
    host: str
    user: str | None = None

    @property
    def show(self) -> str:
        return f"migrate-cron jobs show {self.job_id}"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["slot"] = self.slot.isoformat() if self.slot else None
        data["show"] = self.show
        return data

    def to_json(self) -> bytes:
        return json.dumps(self.as_dict(), ensure_ascii=False).encode("utf-8")

    @property
    def subject(self) -> str:
        what = {
            NotifyEvent.FAILED: (
                f"failed (attempt {self.attempt}/{self.max_attempts}, no retry left)"
            ),
            NotifyEvent.RETRYING: f"failed attempt {self.attempt}/{self.max_attempts}, will retry",
            NotifyEvent.OUTPUT: "printed output",
            NotifyEvent.RECOVERED: "succeeded again",
        }[NotifyEvent(self.event)]
        return f"migrate-cron: {self.job} {what} on {self.host}"

    def body(self) -> str:
        lines = [
            f"job:      {self.job} (id {self.job_id})",
            f"slot:     {self.slot.isoformat() if self.slot else '-'}",
            f"attempt:  {self.attempt}/{self.max_attempts}",
            f"exit:     {self.exit_code if self.exit_code is not None else '-'}",
            f"duration: {self.duration:.3f} s",
            f"host:     {self.host}",
        ]
        if self.error:
            lines.append(f"error:    {self.error}")
        lines += ["", f"details:  {self.show}", "", "output (end):", self.output_tail or "(none)"]
        return "\n".join(lines) + "\n"


def clean(text: str) -> str:
    """Text any transport can carry: a handler's lone surrogates and NUL bytes become U+FFFD
    (a mail or JSON body must be valid UTF-8; a NUL ends a C string in an MTA)."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def exit_code(error: str | None) -> int | None:
    match = _EXIT.search(error or "")
    return int(match.group(1)) if match else None


def hostname() -> str:
    return socket.gethostname()
