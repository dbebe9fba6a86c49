"""Run ``migrate-cron`` in this process, through the real entry point (``cli.main.main``: the
same error handling as the installed command), fast enough for property tests.

Anything that escapes ``main`` other than ``SystemExit`` is a traceback a user would see: it
propagates and fails the test.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
from dataclasses import dataclass

TRACEBACK = "Traceback (most recent call last)"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err


def invoke(*args: str) -> Result:
    from migrate_cron.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    debug = os.environ.pop("MIGRATE_CRON_DEBUG", None)
    sys.argv = ["migrate-cron", *args]
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = argv
        for sig, handler in handlers.items():  # the worker and scheduler install their own
            signal.signal(sig, handler)
        if debug is not None:
            os.environ["MIGRATE_CRON_DEBUG"] = debug
    if isinstance(code, str):  # sys.exit("message")
        err.write(code)
        code = 1
    return Result(int(code or 0), out.getvalue(), err.getvalue())
