"""Python handlers: the jobs that are functions in the application instead of shell commands.

A handler is called as ``func(payload, context)``:

- ``payload`` is the job's JSON payload as stored (``None`` when enqueued without one);
- ``context`` is a :class:`Context` (job id, kind, attempt, the cron slot, a cancel flag).

Return normally for success (a returned ``str`` is kept as the job's output); raise to fail
the attempt (it is retried with backoff until ``max_attempts``, then shelved as ``failed``
with the error); raise :class:`PermanentFailure` to shelve it at once, without retries.

Two ways to make a function a handler:

- the registry names it: ``[jobs.export] handler = "myapp.jobs:export"``;
- the application decorates it and the worker imports the module
  (``migrate-cron worker --import myapp.jobs``)::

      from migrate_cron.handlers import handler

      @handler("send-welcome-mail", backoff=Backoff(base=30, cap=3600))
      def send_welcome_mail(payload, ctx):
          ...

  and enqueues in its own transaction, so the job exists only if the transaction commits::

      with engine.begin() as conn:
          conn.execute(insert(users).values(...))
          store.enqueue("send-welcome-mail", {"user_id": 42}, conn=conn)

Handlers run in the worker's threads. A ``timeout`` is cooperative for Python code (a thread
cannot be killed): check ``context.should_stop()`` in long loops; on shutdown the worker waits
``--grace`` seconds, then gives the job back and exits.
"""

from __future__ import annotations

import importlib
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from migrate_cron.registry import Backoff
from migrate_cron.worker.cancel import Cancel

HandlerFunc = Callable[[Any, "Context"], Any]
F = TypeVar("F", bound=Callable[..., Any])


class PermanentFailure(Exception):
    """Raise from a handler to shelve the job as ``failed`` now: retrying cannot help."""


@dataclass(frozen=True, slots=True)
class Context:
    """What a handler knows about the attempt it is running.

    ``scheduled_for`` is the cron slot for scheduled jobs (use it as an idempotency key);
    ``deadline`` is a ``time.monotonic()`` value when the job has a timeout; ``cancelled``
    is set (``cancelled.is_set()``) when the worker shuts down or lost the job's lease.
    """

    job_id: int
    kind: str
    attempt: int
    max_attempts: int
    scheduled_for: datetime | None
    worker_id: str
    deadline: float | None = None
    cancelled: Cancel = field(default_factory=Cancel)

    def should_stop(self) -> bool:
        """True once the worker shuts down, the lease was lost, or the timeout has passed."""
        if self.cancelled.is_set():
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline


@dataclass(frozen=True, slots=True)
class Handler:
    """A decorated function and its per-kind retry settings."""

    kind: str
    func: HandlerFunc
    backoff: Backoff = field(default_factory=Backoff)
    timeout: float | None = None


_registered: dict[str, Handler] = {}
_lock = threading.Lock()


def handler(
    kind: str, *, backoff: Backoff | None = None, timeout: float | None = None
) -> Callable[[F], F]:
    """Register the decorated function as the handler for jobs of ``kind``.

    Registering a second, different function for the same kind is an error (two modules would
    otherwise race to own it); importing the same module twice is fine.
    """
    if not kind or not isinstance(kind, str):
        raise ValueError("handler kind must be a non-empty string")

    def decorate(func: F) -> F:
        entry = Handler(kind, func, backoff or Backoff(), timeout)
        with _lock:
            existing = _registered.get(kind)
            if existing is not None and _qualname(existing.func) != _qualname(func):
                raise ValueError(f"kind {kind!r} already has a handler: {_qualname(existing.func)}")
            _registered[kind] = entry
        return func

    return decorate


def registered() -> Mapping[str, Handler]:
    """A snapshot of the decorated handlers, by kind."""
    with _lock:
        return dict(_registered)


def unregister(kind: str) -> None:
    """Forget a decorated handler (tests)."""
    with _lock:
        _registered.pop(kind, None)


def load_handler(ref: str) -> HandlerFunc:
    """Import ``"package.module:function"`` (dots after the colon reach attributes).

    Raises ImportError or AttributeError with the reference in the message; the caller turns
    it into a ConfigError naming the registry job.
    """
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ImportError(f"{ref!r} must look like 'package.module:function'")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{ref!r} is not callable")
    return obj  # type: ignore[no-any-return]


def call_handler(
    func: HandlerFunc, payload: Any, ctx: Context, output_cap: int
) -> tuple[bool, str | None, str | None, bool]:
    """Run a handler; returns (ok, error, output, terminal). Never raises (but for
    KeyboardInterrupt): a handler's exception is the job's failure, not the worker's."""
    try:
        result = func(payload, ctx)
    except PermanentFailure as exc:
        return False, _error_line(exc), _traceback_tail(exc, output_cap), True
    except (Exception, SystemExit) as exc:
        return False, _error_line(exc), _traceback_tail(exc, output_cap), False
    if isinstance(result, str):
        return True, None, result[-output_cap:] if output_cap else result, False
    return True, None, None, False


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _traceback_tail(exc: BaseException, cap: int) -> str:
    text = "".join(traceback.format_exception(exc))
    return text[-cap:] if cap else text


def _qualname(func: Callable[..., Any]) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
