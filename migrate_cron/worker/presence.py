"""This worker's row in ``job_workers`` (``store/workers.py``): written at start, renewed by
the heartbeat thread (``heartbeat.py``), closed by a graceful stop.

The row is what lets the console show an idle worker, and tell a worker that stopped on
purpose from one that stopped heartbeating. None of it may stop the worker from working: a
start or stop that cannot be written is logged and the worker goes on (the next heartbeat
writes a missing row whole), and a database without the table is skipped by the store.
"""

from __future__ import annotations

import os
import pwd
import socket
from collections.abc import Sequence

from migrate_cron.store.workers import ROOT_USER, WorkerInfo
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.outage import OUTAGE_ERRORS
from migrate_cron.worker.source import WorkSource


def worker_info(
    worker_id: str, kinds: Sequence[str] | None, concurrency: int, heartbeat: float | None = None
) -> WorkerInfo:
    """What this process says of itself: host, the user it runs as (root: it can run a job
    as any user, ``identity.py``), the kinds it claims (None: any) and its pid."""
    return WorkerInfo(
        name=worker_id,
        host=socket.gethostname(),
        run_as=user_name(),
        kinds=None if kinds is None else tuple(kinds),
        pid=os.getpid(),
        concurrency=concurrency,
        heartbeat=heartbeat,
    )


def user_name() -> str:
    uid = os.geteuid()
    if uid == 0:
        return ROOT_USER
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def hello(store: WorkSource, info: WorkerInfo, log: WorkerLog) -> None:
    try:
        store.worker_started(info)
    except OUTAGE_ERRORS as exc:
        log.event("presence", f"worker row not written ({type(exc).__name__}); the heartbeat will")


def goodbye(store: WorkSource, worker_id: str, log: WorkerLog) -> None:
    """Say the stop was on purpose (the console shows "stopped", not "gone")."""
    try:
        store.worker_stopped(worker_id)
    except OUTAGE_ERRORS as exc:
        log.event("presence", f"worker stop not written ({type(exc).__name__})")
