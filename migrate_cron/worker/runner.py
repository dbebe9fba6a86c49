"""Runs a legacy command the way cron would, and nothing a database row could inject.

``SHELL -c command`` with the command, shell, env, cwd and ``%``-stdin taken from the registry
entry (code under review). The row contributes data only, as environment variables:

- ``MIGRATE_CRON_JOB_ID``, ``MIGRATE_CRON_ATTEMPT``, ``MIGRATE_CRON_KIND``;
- ``MIGRATE_CRON_SCHEDULED_FOR`` — the cron slot (ISO 8601, UTC; empty when not scheduled),
  so a script can make its work idempotent per slot;
- ``MIGRATE_CRON_PAYLOAD`` — the payload as JSON.

The environment is cron's minimal one (HOME, LOGNAME, USER, PATH=/usr/bin:/bin, SHELL) with the
job's env lines on top, not the worker's environment. The working directory is the job's
``cwd`` or, as with cron, HOME; when that directory is missing, the entry's ``cwd_fallback``
(cron's own directory, as Debian's cron and busybox run it), else the run fails at once and
says why (as cronie does not run it): see ``workdir.py``. The command runs in its own session
and process group; a timeout or a shutdown signals the whole group (SIGTERM, then SIGKILL after
``kill_grace``), so grandchildren go too (a process that calls setsid itself escapes, as it
would escape cron).
Exit status 0 is success. stdout and stderr are read as they come and only their last
``output_cap`` bytes are kept, so a chatty job cannot grow the worker's memory.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import select
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from migrate_cron.registry import JobSpec, run_as_problem
from migrate_cron.store.models import Job
from migrate_cron.worker.cancel import Cancel
from migrate_cron.worker.identity import Identity, IdentityError, lookup
from migrate_cron.worker.outcome import Outcome
from migrate_cron.worker.output_so_far import OutputSoFar, combine
from migrate_cron.worker.workdir import choose

CRON_PATH = "/usr/bin:/bin"
_POLL = 0.1  # how often a waiting runner looks at its cancel flag
_ERROR_TAIL = 2000  # characters of stderr quoted in last_error


class Tail:
    """The last ``cap`` bytes written to a stream, and how many were dropped before them.
    Locked: the heartbeat thread reads it while the runner thread adds (``output_so_far``)."""

    __slots__ = ("buf", "cap", "dropped", "lock")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.dropped = 0
        self.lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self.lock:
            self.buf += data
            if len(self.buf) > 2 * self.cap:
                cut = len(self.buf) - self.cap
                del self.buf[:cut]
                self.dropped += cut

    @property
    def total(self) -> int:
        """Bytes written so far, kept or dropped (grows with every ``add``)."""
        with self.lock:
            return self.dropped + len(self.buf)

    def text(self) -> str:
        with self.lock:
            extra = max(0, len(self.buf) - self.cap)
            body = bytes(self.buf[extra:]).decode("utf-8", errors="replace")
            dropped = self.dropped + extra
        return f"[… {dropped} bytes dropped]\n{body}" if dropped else body


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What the process did: ``returncode`` (negative: killed by that signal), whether we
    killed it for a timeout or a cancel, and the captured tails."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    cancelled: bool = False
    start_error: str | None = None
    #: The run did not start for a reason a retry cannot change (its directory is missing).
    permanent: bool = False
    #: Said in the worker's log with the outcome: the fallback directory was taken.
    note: str | None = None


@functools.cache
def _user() -> tuple[str, str]:
    try:
        entry = pwd.getpwuid(os.getuid())
        return entry.pw_name, entry.pw_dir
    except KeyError:
        return os.environ.get("LOGNAME", "nobody"), os.environ.get("HOME", "/")


def cron_environment(spec: JobSpec, job: Job, identity: Identity | None = None) -> dict[str, str]:
    """cron's minimal environment, the job's env lines on top, then our MIGRATE_CRON_* data.
    HOME, LOGNAME and USER are those of the user the command runs as (SHELL stays the
    crontab's, /bin/sh by default, as cron sets it)."""
    name, home = (identity.name, identity.home) if identity is not None else _user()
    env = {"HOME": home, "LOGNAME": name, "USER": name, "PATH": CRON_PATH, "SHELL": spec.shell}
    env.update(spec.env)
    env["MIGRATE_CRON_JOB_ID"] = str(job.id)
    env["MIGRATE_CRON_KIND"] = job.kind
    env["MIGRATE_CRON_ATTEMPT"] = str(job.attempts)
    env["MIGRATE_CRON_SCHEDULED_FOR"] = (
        job.scheduled_for.isoformat() if job.scheduled_for is not None else ""
    )
    env["MIGRATE_CRON_PAYLOAD"] = json.dumps(job.payload, ensure_ascii=False, default=str)
    return env


def run_command(
    spec: JobSpec,
    job: Job,
    cancel: Cancel,
    *,
    output_cap: int = 8 * 1024,
    kill_grace: float = 5.0,
    cwd: str | None = None,
    so_far: OutputSoFar | None = None,
) -> CommandResult:
    """Run ``spec.command`` for ``job``; returns when the process and its pipes are done.
    ``so_far`` is given the tails as they fill (the heartbeat stores them meanwhile)."""
    assert spec.command is not None
    refused = run_as_problem(spec.user, spec.sources, spec.command)
    if refused:  # the loader and the catalog refuse these: never run as another user
        return CommandResult(None, "", "", start_error=f"not run: key 'user': {refused}")
    try:
        identity = lookup(spec.user) if spec.user else None
    except IdentityError as exc:  # the catalog filters these; a passwd change since start
        return CommandResult(None, "", "", start_error=f"cannot run as {spec.user}: {exc}")
    env = cron_environment(spec, job, identity)
    place = choose(
        cwd or spec.cwd or env["HOME"],
        spec.cwd_fallback,
        what="cwd" if cwd or spec.cwd else "HOME",
        job_id=job.id,
    )
    if place.path is None:
        return CommandResult(None, "", "", start_error=place.note, permanent=True)
    workdir = place.path
    stdin_data = spec.stdin.encode() if spec.stdin else None
    try:
        proc = subprocess.Popen(
            [spec.shell, "-c", spec.command],
            stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=env,
            start_new_session=True,
            close_fds=True,
            **(identity.popen_kwargs() if identity is not None else {}),
        )
    except ValueError as exc:  # a NUL byte (the loader refuses them: a JobSpec built otherwise)
        return CommandResult(None, "", "", start_error=f"cannot start {spec.shell!r}: {exc}")
    except OSError as exc:
        where = f" in {workdir}" if getattr(exc, "filename", None) == workdir else ""
        return CommandResult(
            None, "", "", start_error=f"cannot start {spec.shell}{where}: {exc.strerror or exc}"
        )
    deadline = time.monotonic() + spec.timeout if spec.timeout else None
    out, err = Tail(output_cap), Tail(output_cap)
    if so_far is not None:
        so_far.watch(out, err)
    try:
        stopped = _pump(proc, stdin_data, out, err, cancel, deadline)
        if stopped is None:
            stopped = _wait(proc, cancel, deadline)
        if stopped is not None:
            _kill_group(proc, kill_grace, cancel)
    finally:
        _close(proc)
        if proc.returncode is None:  # only on an unexpected error above: leave nothing behind
            _kill_group(proc, 0.0, cancel)
    return CommandResult(
        proc.returncode,
        out.text(),
        err.text(),
        timed_out=stopped == "timeout",
        cancelled=stopped == "cancel",  # vocabulary: the runner's stop reason
        note=place.note,
    )


def _pump(
    proc: subprocess.Popen[bytes],
    stdin_data: bytes | None,
    out: Tail,
    err: Tail,
    cancel: Cancel,
    deadline: float | None,
) -> str | None:
    """Feed stdin and read both pipes until EOF; returns "timeout"/"cancel" if stopped early."""
    sinks: Mapping[int, Tail] = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}  # type: ignore[union-attr]
    with selectors.DefaultSelector() as sel:
        for fd in sinks:
            sel.register(fd, selectors.EVENT_READ)
        pending = memoryview(stdin_data) if stdin_data else None
        if pending is not None and proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
        while sel.get_map():
            reason = _stop_reason(cancel, deadline)
            if reason:
                return reason
            wait = _POLL if deadline is None else max(0.0, min(_POLL, deadline - time.monotonic()))
            for key, _ in sel.select(wait):
                fd = key.fd
                if fd in sinks:
                    data = os.read(fd, 65536)
                    if data:
                        sinks[fd].add(data)
                    else:
                        sel.unregister(fd)
                    continue
                assert pending is not None and proc.stdin is not None
                try:
                    pending = pending[os.write(fd, pending) :]
                except BrokenPipeError:
                    pending = pending[:0]
                if not pending:
                    sel.unregister(fd)
                    proc.stdin.close()
    return None


def _wait(proc: subprocess.Popen[bytes], cancel: Cancel, deadline: float | None) -> str | None:
    """Wait for the exit after the pipes closed (a command may close stdout and keep going).

    On Linux a pidfd wakes us the moment the process exits; ``Popen.wait(timeout)`` instead
    sleeps in growing steps, which added milliseconds to every short command.
    """
    if proc.poll() is not None:
        return None
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: poll
        pidfd = None
    try:
        while True:
            reason = _stop_reason(cancel, deadline)
            if reason:
                return reason
            wait = _POLL if deadline is None else max(0.0, min(_POLL, deadline - time.monotonic()))
            if pidfd is not None:
                select.select([pidfd], [], [], wait)
                if proc.poll() is not None:
                    return None
                continue
            try:
                proc.wait(wait)
                return None
            except subprocess.TimeoutExpired:
                continue
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _stop_reason(cancel: Cancel, deadline: float | None) -> str | None:
    if cancel.is_set():
        return "cancel"
    if deadline is not None and time.monotonic() >= deadline:
        return "timeout"
    return None


def _kill_group(proc: subprocess.Popen[bytes], grace: float, cancel: Cancel) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace`` s (at once if the cancel is or
    becomes hard), and reap the child."""
    pgid = proc.pid  # start_new_session: the child leads its own group
    if grace > 0 and not cancel.hard:
        _signal_group(pgid, signal.SIGTERM)
        until = time.monotonic() + grace
        while not cancel.hard and time.monotonic() < until:
            try:
                proc.wait(min(_POLL, max(0.0, until - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                continue
    _signal_group(pgid, signal.SIGKILL)  # stragglers in the group, even if the leader is gone
    proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _close(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def command_outcome(result: CommandResult, timeout: float | None) -> Outcome:
    """Turn a finished process into an outcome; ``last_error`` names the exit code or signal
    and quotes the end of stderr, the output keeps both tails."""
    output = _combined_output(result)
    if result.start_error is not None:
        return Outcome.failed(result.start_error, output, terminal=result.permanent)
    outcome = _ended(result, timeout, output)
    return replace(outcome, note=result.note) if result.note else outcome


def _ended(result: CommandResult, timeout: float | None, output: str) -> Outcome:
    if result.cancelled:
        return Outcome.release()  # the caller decides: shutdown → release, lease lost → lost
    if result.timed_out:
        return Outcome.failed(
            _with_stderr(f"timed out after {timeout:g}s; process group killed", result), output
        )
    rc = result.returncode
    if rc == 0:
        return Outcome.done(output or None, exit_code=0)
    if rc is not None and rc < 0:
        return Outcome.failed(
            _with_stderr(f"killed by signal {_signal_name(-rc)}", result), output, exit_code=rc
        )
    return Outcome.failed(_with_stderr(f"exit code {rc}", result), output, exit_code=rc)


def _with_stderr(head: str, result: CommandResult) -> str:
    tail = result.stderr.strip()
    if not tail:
        return head
    return f"{head}; stderr: {tail[-_ERROR_TAIL:]}"


def _combined_output(result: CommandResult) -> str:
    return combine(result.stdout, result.stderr)


def _signal_name(num: int) -> str:
    try:
        return f"{signal.Signals(num).name} ({num})"
    except ValueError:
        return str(num)
