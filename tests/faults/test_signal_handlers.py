"""SIGTERM must always stop a process: a signal handler never takes a lock the interrupted
main thread may hold.

``threading.Event.set()`` takes the Event's internal lock. A handler runs in the main thread
between two bytecodes — possibly while that thread is inside ``event.wait()`` holding the very
same lock — and then waits for itself forever. (Found by a scheduler that ignored SIGTERM for
30 s in ``test_outages``.) So handlers only start a thread that sets the flag; the worker's
``request_stop`` says the same. The first test shows the hazard is real, the second keeps
every handler in ``migrate_cron/`` clear of it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "migrate_cron"
DEADLOCK = """
import os, signal, threading
ev = threading.Event()
signal.signal(signal.SIGUSR1, lambda s, f: {handler})
with ev._cond:  # where ev.wait() is when the signal lands at the wrong moment
    os.kill(os.getpid(), signal.SIGUSR1)
    sum(range(10))
print("stopped")
"""


def _run(handler: str) -> str | None:
    code = DEADLOCK.format(handler=handler)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=3, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    return done.stdout.strip()


def test_setting_an_event_inside_the_handler_can_deadlock_and_a_thread_cannot() -> None:
    assert _run("ev.set()") is None  # hangs: the handler waits for a lock its thread holds
    assert _run("threading.Thread(target=ev.set, daemon=True).start()") == "stopped"


def _handlers(tree: ast.AST) -> list[ast.AST]:
    """The handler functions passed to ``signal.signal`` (lambdas and local defs)."""
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    found: list[ast.AST] = []
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "signal"
            and len(n.args) == 2
        ):
            handler = n.args[1]
            if isinstance(handler, ast.Lambda):
                found.append(handler)
            elif isinstance(handler, ast.Name) and handler.id in defs:
                found.append(defs[handler.id])
    return found


def test_no_signal_handler_sets_an_event_or_takes_a_lock_itself() -> None:
    blocking = {"set", "clear", "acquire", "request_stop", "put", "join", "wait"}
    offenders = []
    handlers = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for handler in _handlers(tree):
            handlers += 1
            for n in ast.walk(handler):
                if (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and n.func.attr in blocking
                ):
                    offenders.append(f"{path.relative_to(PACKAGE)}: {ast.unparse(n)}")
    assert handlers >= 3, "expected the worker's, the scheduler's and the metrics handlers"
    assert not offenders, "signal handlers that may deadlock:\n" + "\n".join(offenders)
