"""The @handler decorator, handler references from the registry, and how a handler's return
or exception becomes the job's outcome."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from migrate_cron import handlers as public
from migrate_cron.worker.handlers import (
    Context,
    PermanentFailure,
    call_handler,
    handler,
    load_handler,
    registered,
    unregister,
)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    yield
    for kind in ("t-mail", "t-dup"):
        unregister(kind)


def _ctx() -> Context:
    return Context(job_id=1, kind="k", attempt=1, max_attempts=3, scheduled_for=None, worker_id="w")


def test_decorator_registers_and_returns_the_function_unchanged() -> None:
    @public.handler("t-mail", backoff=public.Backoff(base=1, cap=2), timeout=5)
    def send(payload: Any, ctx: Context) -> str:
        return f"sent {payload['to']}"

    entry = registered()["t-mail"]
    assert entry.func is send and entry.timeout == 5 and entry.backoff.cap == 2
    assert send({"to": "a@b"}, _ctx()) == "sent a@b"


def test_two_different_functions_for_one_kind_is_an_error() -> None:
    @handler("t-dup")
    def first(payload: Any, ctx: Context) -> None: ...

    with pytest.raises(ValueError, match="already has a handler"):

        @handler("t-dup")
        def second(payload: Any, ctx: Context) -> None: ...


def test_load_handler_resolves_module_and_attribute_path() -> None:
    assert load_handler("os.path:join") is __import__("os").path.join
    with pytest.raises(ImportError):
        load_handler("no_such_module_xyz:f")
    with pytest.raises(AttributeError):
        load_handler("os.path:no_such_function")
    with pytest.raises(ImportError, match=r"package\.module:function"):
        load_handler("os.path")


def test_call_handler_outcomes() -> None:
    ok = call_handler(lambda p, c: "out" * 10, None, _ctx(), output_cap=5)
    assert ok == (True, None, "utout", False)
    assert call_handler(lambda p, c: 42, None, _ctx(), 100) == (True, None, None, False)

    def boom(p: Any, c: Context) -> None:
        raise ValueError("bad row 7")

    success, error, output, terminal = call_handler(boom, None, _ctx(), 10_000)
    assert not success and error == "ValueError: bad row 7" and not terminal
    assert output is not None and "Traceback" in output and "bad row 7" in output

    def give_up(p: Any, c: Context) -> None:
        raise PermanentFailure("customer deleted")

    assert call_handler(give_up, None, _ctx(), 100)[1:4:2] == (
        "PermanentFailure: customer deleted",
        True,
    )

    def exits(p: Any, c: Context) -> None:
        raise SystemExit(3)

    assert call_handler(exits, None, _ctx(), 100)[0] is False


def test_context_should_stop_on_cancel_or_deadline() -> None:
    import time

    ctx = _ctx()
    assert not ctx.should_stop()
    ctx.cancelled.set("shutdown")
    assert ctx.should_stop()
    late = Context(1, "k", 1, 1, None, "w", deadline=time.monotonic() - 1)
    assert late.should_stop()
