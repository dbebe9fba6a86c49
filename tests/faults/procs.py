"""Process plumbing for the fault tests: start the installed command in its own session, keep
its output in a file, kill whole process groups, and always clean up.

Every process a fault test starts goes through a :class:`Fleet`, a context manager that
SIGKILLs every group it started on the way out, whatever happened in the test.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tests.conftest import cli_path

T = TypeVar("T")

#: A Python handler module the chaos tests import (written next to their registry). Each run
#: appends one line to $MCT_RESULTS with one O_APPEND write — atomic for a short line, so a
#: SIGKILL leaves either the whole record or none — then sleeps ``payload["ms"]``. ``record``
#: writes "job_id pid"; ``record_keyed`` "kind key pid start-time", the key naming the job by
#: its content (the payload's n, else the slot), for tests where an id may be drawn twice.
HANDLER_MODULE = """\
import os
import time

_fd = None


def _append(line):
    global _fd
    if _fd is None:
        _fd = os.open(os.environ["MCT_RESULTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_fd, f"{line}\\n".encode())


def record(payload, ctx):
    _append(f"{ctx.job_id} {os.getpid()}")
    ms = (payload or {}).get("ms", 0)
    if ms:
        time.sleep(ms / 1000)


def record_keyed(payload, ctx):
    key = payload["n"] if payload else ctx.scheduled_for.isoformat()
    _append(f"{ctx.kind} {key} {os.getpid()} {time.time():.3f}")
    time.sleep((payload or {}).get("ms", 100) / 1000)
"""


def chaos_registry(handler: str = "record", misfire_grace: int = 86400) -> str:
    """A registry of ``chaos`` (queued jobs) and ``tick`` (an every-minute scheduler job that
    backfills what an outage missed), both run by the handler module's ``handler``."""
    return f"""\
[jobs.chaos]
handler = "chaos_jobs:{handler}"
max_attempts = 100

[jobs.tick]
handler = "chaos_jobs:{handler}"
schedule = "* * * * *"
mode = "scheduler"
policy = "backfill"
max_backfill = 1000
misfire_grace = {misfire_grace}
max_attempts = 100
"""


def wait_for(check: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


def cli_env(db_url: str, table_prefix: str, registry: Path | None = None, **extra: str) -> dict:
    env = {
        **os.environ,
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        # A process that hangs is sent SIGABRT by ``Proc.wait``: this makes it print every
        # thread's stack first, so a hang in CI explains itself.
        "PYTHONFAULTHANDLER": "1",
        **extra,
    }
    if registry is not None:
        env["MIGRATE_CRON_REGISTRY"] = str(registry)
    env.pop("MIGRATE_CRON_DEBUG", None)
    return env


@dataclass
class Proc:
    """One started process: its Popen, its combined output file and a label."""

    popen: subprocess.Popen[bytes]
    log: Path
    label: str
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def signal(self, sig: int) -> None:
        """Signal the whole process group (the worker and the commands it started)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGABRT)  # faulthandler dumps the stacks
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(5)
            raise AssertionError(
                f"{self.label} (pid {self.pid}) did not exit within {timeout:g}s; output:\n"
                + self.output()[-3000:]
            ) from None


@dataclass
class Fleet:
    """Starts processes and guarantees that every one of them is gone afterwards."""

    workdir: Path
    procs: list[Proc] = field(default_factory=list)
    _n: int = 0

    def start(
        self,
        args: Sequence[str],
        env: dict[str, str],
        *,
        label: str = "",
        cwd: Path | None = None,
        python: bool = False,
    ) -> Proc:
        """Start ``migrate-cron ARGS`` (or, with ``python``, ``python ARGS``)."""
        self._n += 1
        log = self.workdir / f"proc-{self._n}-{(label or args[0]).replace('/', '_')}.log"
        argv = [sys.executable, *args] if python else [cli_path(), *args]
        with open(log, "wb") as fh:
            popen = subprocess.Popen(
                argv,
                cwd=cwd or self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(popen, log, label or args[0])
        self.procs.append(proc)
        return proc

    def alive(self) -> list[Proc]:
        return [p for p in self.procs if p.alive()]

    def kill_all(self) -> None:
        for p in self.procs:
            p.signal(signal.SIGKILL)
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.popen.wait(10)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill_all()


@contextlib.contextmanager
def fleet(workdir: Path) -> Iterator[Fleet]:
    f = Fleet(workdir)
    try:
        yield f
    finally:
        f.kill_all()


def pacing(low: float, high: float) -> None:
    """The chaos loop's random pause between two faults (pacing, not synchronisation)."""
    time.sleep(random.uniform(low, high))


def write_handler_project(directory: Path, registry_body: str) -> Path:
    """A directory with the chaos handler module and a registry; returns the registry path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "chaos_jobs.py").write_text(HANDLER_MODULE)
    registry = directory / "migrate-cron.toml"
    registry.write_text(registry_body)
    return registry


def read_results(path: Path) -> list[tuple[int, int]]:
    """The (job_id, pid) records the chaos handler wrote, one per run started."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        job_id, pid = line.split()
        out.append((int(job_id), int(pid)))
    return out


def tcp_client_ports(pid: int, server_port: int) -> set[int]:
    """The local ports of ``pid``'s open TCP connections to ``server_port`` on this machine
    (Linux: its socket inodes from /proc/PID/fd, matched in /proc/net/tcp and tcp6). A test
    uses them to tell which of the server's sessions belong to which process."""
    inodes: set[str] = set()
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # it exited meanwhile
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(FileNotFoundError):  # that fd closed meanwhile
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as f:
            for row in f.read().splitlines()[1:]:
                fields = row.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
                to_server = int(remote.split(":")[1], 16) == server_port
                if state == "01" and inode in inodes and to_server:  # 01: ESTABLISHED
                    ports.add(int(local.split(":")[1], 16))
    return ports
