"""How a worker stops what it holds: jobs claimed but not started go back at once, running
commands are stopped (SIGTERM, then SIGKILL; at once on a second request) and their jobs go
back, and a command that died of the same stop signal as the worker is not counted against
its job. Python handlers cannot be killed in their thread: their jobs are released and their
ids returned, so the caller can end the process without waiting for them."""

from __future__ import annotations

import queue
import threading
import time

from migrate_cron.store.models import Job
from migrate_cron.worker.cancel import SHUTDOWN
from migrate_cron.worker.finisher import Finisher
from migrate_cron.worker.inflight import Ledger
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.outcome import FAILED, Outcome

#: Exits of a command that a stop signal ended: killed by SIGHUP/SIGINT/SIGTERM, or a shell
#: reporting its child's death by one (128 + N).
_STOP_EXITS = frozenset({-1, -2, -15, 129, 130, 143})
#: How long a command's death by such a signal waits for this worker's own stop request.
_STOP_SIGNAL_WINDOW = 1.0


def ended_by_our_stop(outcome: Outcome, stopping: threading.Event) -> bool:
    """A command that died of SIGTERM/SIGINT/SIGHUP while this worker is being stopped was
    stopped *with* it, not by its own fault: its attempt is not spent, the job goes back.

    systemd (``KillMode=control-group``), ``docker stop`` of a shell entry point, or a
    ``kill -- -PGID`` reach the commands at the same moment as the worker, and the command
    can exit before this process has run its own signal handler; so the stop request gets up
    to a second to arrive before the failure is believed.
    """
    if outcome.status != FAILED or outcome.exit_code not in _STOP_EXITS:
        return False
    return stopping.wait(_STOP_SIGNAL_WINDOW)


def release_queued(dispatch: queue.SimpleQueue[Job | None], finisher: Finisher) -> None:
    """Give back every job claimed but not yet taken by a runner."""
    while True:
        try:
            job = dispatch.get_nowait()
        except queue.Empty:
            return
        if job is None:  # a runner's stop sentinel: put it back for the runners
            dispatch.put(None)
            return
        finisher.put(job, Outcome.release())


def stop_running(
    ledger: Ledger,
    finisher: Finisher,
    log: WorkerLog,
    force: threading.Event,
    kill_grace: float,
) -> list[int]:
    """Stop what still runs after the grace; returns ids abandoned (Python threads)."""
    running = ledger.running()
    if not running:
        return []
    hard = force.is_set()
    log.event(
        "stopping",
        f"stopping {len(running)} running job(s) "
        f"({'SIGKILL' if hard else 'SIGTERM, then SIGKILL'}); they go back to the queue",
    )
    ledger.cancel([slot.job.id for slot in running], SHUTDOWN, hard=hard)
    wait_until = time.monotonic() + (0.0 if hard else kill_grace) + 2.0
    while ledger.running() and time.monotonic() < wait_until:
        if force.is_set() and not hard:  # a second signal while waiting
            hard = True
            ledger.cancel([sl.job.id for sl in ledger.running()], SHUTDOWN, hard=True)
        ledger.wait_change(0.1)
    still = ledger.running()
    stuck = ledger.abandon(still)
    jobs = {slot.job.id: slot.job for slot in still}
    for job_id in stuck:
        finisher.put(jobs[job_id], Outcome.release())
    if stuck:
        log.event(
            "abandoned",
            f"{len(stuck)} Python handler(s) did not return; released their jobs",
        )
    return stuck
