"""Shared helpers for the worker tests: building jobs and registries, running a worker in a
thread or as the installed command, and waiting for conditions with a deadline."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from migrate_cron.registry import Registry, parse_registry
from migrate_cron.store import Store
from migrate_cron.store.models import Job
from migrate_cron.worker.catalog import Catalog
from migrate_cron.worker.log import WorkerLog
from migrate_cron.worker.loop import Worker, WorkerSummary
from migrate_cron.worker.settings import WorkerSettings

T = TypeVar("T")


def make_job(
    job_id: int = 7,
    kind: str = "k",
    payload: Any = None,
    attempts: int = 1,
    max_attempts: int = 3,
    scheduled_for: datetime | None = None,
) -> Job:
    now = datetime.now(UTC)
    return Job(
        id=job_id,
        kind=kind,
        ref=None,
        payload=payload,
        state="running",
        attempts=attempts,
        max_attempts=max_attempts,
        run_at=now,
        scheduled_for=scheduled_for,
        locked_by="w",
        locked_until=now,
        last_error=None,
        output=None,
        created_at=now,
        started_at=now,
        finished_at=None,
    )


def registry(jobs: dict[str, dict[str, Any]], path: Path | str = "migrate-cron.toml") -> Registry:
    return parse_registry({"jobs": jobs}, str(path))


def wait_for(
    check: Callable[[], T], timeout: float = 30.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(interval)


@dataclass
class ThreadedWorker:
    """A Worker running in a background thread, with its log captured."""

    worker: Worker
    log: io.StringIO
    thread: threading.Thread
    result: list[WorkerSummary] = field(default_factory=list)
    error: list[BaseException] = field(default_factory=list)

    def stop(self, timeout: float = 60.0) -> WorkerSummary:
        self.worker.request_stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "worker did not stop"
        if self.error:
            raise self.error[0]
        return self.result[0]


def start_worker(
    store: Store,
    reg: Registry,
    *,
    worker_id: str | None = None,
    rand: Callable[[], float] | None = None,
    **settings: Any,
) -> ThreadedWorker:
    settings.setdefault("poll", 0.1)
    settings.setdefault("heartbeat", 2.0)
    ws = WorkerSettings(**settings)
    extra: dict[str, Any] = {"rand": rand} if rand is not None else {}
    catalog = Catalog.build(
        reg, ws.kinds or None, output_cap=ws.output_cap, kill_grace=ws.kill_grace, **extra
    )
    log = io.StringIO()
    worker = Worker(store, catalog, ws, log=WorkerLog(log), worker_id=worker_id)
    tw = ThreadedWorker(worker, log, threading.Thread(target=lambda: None))

    def target() -> None:
        try:
            tw.result.append(worker.run())
        except BaseException as exc:
            tw.error.append(exc)

    tw.thread = threading.Thread(target=target, daemon=True)
    tw.thread.start()
    return tw


def run_once(store: Store, reg: Registry, **settings: Any) -> tuple[WorkerSummary, str]:
    """Run a ``once`` worker to completion in this thread; returns its summary and log."""
    tw = start_worker(store, reg, once=True, **settings)
    tw.thread.join(120)
    assert not tw.thread.is_alive(), "--once worker did not drain"
    if tw.error:
        raise tw.error[0]
    return tw.result[0], tw.log.getvalue()


def pid_alive(pid: int) -> bool:
    """True if the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def kill_group_quietly(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_pids_from(*files: Path) -> None:
    """Clean-up: SIGKILL the process groups whose ids the test's commands wrote down."""
    for f in files:
        if f.exists():
            for word in f.read_text().split():
                if word.isdigit():
                    kill_group_quietly(int(word))
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(word), signal.SIGKILL)


def free_port() -> int:
    """A TCP port nobody listens on right now (for a server the test starts next)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn_cli_worker(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], Path]:
    """Start ``migrate-cron worker`` in its own session; stderr goes to a file we return."""
    from tests.conftest import cli_path

    log = cwd / f"worker-{time.monotonic_ns()}.log"
    full_env = {**os.environ, **(env or {})}
    full_env.pop("MIGRATE_CRON_DEBUG", None)
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [cli_path(), "worker", *args],
            cwd=cwd,
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=fh,
            text=True,
            start_new_session=True,
        )
    return proc, log


def stop_process(proc: subprocess.Popen[str]) -> None:
    """Clean-up for a spawned worker: SIGKILL its group if it is still there."""
    if proc.poll() is None:
        kill_group_quietly(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)


def queue_env(db_url: str, prefix: str, registry: Path) -> dict[str, str]:
    """The environment that points the installed command at a test's queue and registry."""
    return {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
        "MIGRATE_CRON_REGISTRY": str(registry),
    }
