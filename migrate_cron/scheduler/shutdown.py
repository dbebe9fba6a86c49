"""How a scheduler stops on SIGTERM or SIGINT: the current tick finishes, the lease is given
up, exit 0; and if a frozen database call never returns, it leaves after a bound anyway."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from migrate_cron.scheduler.log import SchedulerLog

#: Seconds a scheduler may take to stop after SIGTERM before it exits regardless.
SHUTDOWN_BOUND = 10.0


def stop_on_signals(stop: threading.Event, log: SchedulerLog) -> None:
    """Set ``stop`` on SIGTERM and SIGINT, and exit ``SHUTDOWN_BOUND`` seconds later if the
    loop has not seen it by then."""
    import signal

    def on_signal(_signum: int, _frame: object) -> None:
        # Not stop.set() here: a signal landing while the main thread holds the Event's lock
        # (entering or leaving stop.wait) would deadlock on it. Set it from another thread.
        threading.Thread(target=stop.set, daemon=True).start()
        # A database call that froze cannot see the stop: leave after a few seconds anyway
        # (the lease row then expires and a standby takes over; slots are keyed, nothing lost).
        timer = threading.Timer(SHUTDOWN_BOUND, _leave_now, args=(log,))
        timer.daemon = True
        timer.start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _leave_now(log: SchedulerLog) -> None:
    """The stop asked for, done the only way left: a scheduler keeps nothing in memory that
    the database lacks (slots are keyed, its lease expires within the TTL and a standby takes
    over), so this is a clean stop, exit 0 — a supervisor must not see a failure in it."""
    import os
    import sys

    log.event(
        "exit",
        f"still stopping after {SHUTDOWN_BOUND:g}s (the database does not answer): exiting now; "
        "the lease expires on its own",
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
