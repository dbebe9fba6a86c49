"""Which code runs for a job kind: a registry command, a registry handler, or a decorated one.

Built once at start-up, so a handler that does not import fails the start (naming the registry
job and key), not each job. A row whose kind is in none of them runs nothing: it is shelved as
``failed`` with an error saying so. A row only ever *selects* code by its kind; its payload is
passed as data (JSON) and never becomes part of a command line.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from migrate_cron.errors import ConfigError, UsageError
from migrate_cron.registry import Backoff, JobSpec, Registry, TableSpec, run_as_problem
from migrate_cron.store.base import DEFAULT_MAX_ATTEMPTS
from migrate_cron.store.models import Job
from migrate_cron.worker.backoff import retry_delay
from migrate_cron.worker.cancel import LEASE_LOST, Cancel
from migrate_cron.worker.handlers import Context, HandlerFunc, call_handler, load_handler
from migrate_cron.worker.handlers import registered as registered_handlers
from migrate_cron.worker.identity import IdentityError, lookup
from migrate_cron.worker.outcome import DONE, FAILED, RELEASE, Outcome
from migrate_cron.worker.output_so_far import OutputSoFar
from migrate_cron.worker.runner import command_outcome, run_command

MAX_ERROR = 4000
#: Where a command finds the business-table row it runs for (``worker --table``). The key is
#: data: it reaches the script as environment, never inside the command's text.
ROW_KEY_ENV = "MIGRATE_CRON_ROW_KEY"
TABLE_ENV = "MIGRATE_CRON_TABLE"  # characters of last_error (an exception message can be any size)


@dataclass(frozen=True, slots=True)
class Task:
    """The code for one kind: a command (``spec``) or a Python function (``func``)."""

    kind: str
    backoff: Backoff
    timeout: float | None
    spec: JobSpec | None = None
    func: HandlerFunc | None = None
    cwd: str | None = None  # the command's cwd resolved against the registry's directory
    #: The business table whose rows this task processes (``worker --table``): a command
    #: then gets the row's key as ``MIGRATE_CRON_ROW_KEY``.
    table: str | None = None


@dataclass(frozen=True)
class Catalog:
    registry_path: str
    tasks: Mapping[str, Task]
    output_cap: int = 8 * 1024
    kill_grace: float = 5.0
    rand: Callable[[], float] = random.random
    #: Registry jobs this worker cannot run (it cannot become their ``user``), with why: they
    #: are not claimed, and the worker says so once at start.
    unrunnable: Mapping[str, str] = field(default_factory=dict)
    #: Registry entries that did not load (name → the error naming file, line, job, key):
    #: not claimed — their jobs wait, open, until the entry is fixed — and said at start.
    refused: Mapping[str, str] = field(default_factory=dict)
    #: kind → ((kind, max_attempts) enqueued on success, … on final failure): chains.
    chains: Mapping[str, tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]] = field(
        default_factory=dict
    )

    @classmethod
    def build(
        cls,
        registry: Registry,
        kinds: Sequence[str] | None = None,
        *,
        output_cap: int = 8 * 1024,
        kill_grace: float = 5.0,
        rand: Callable[[], float] = random.random,
    ) -> Catalog:
        """Load every kind this worker may run (all, or ``kinds``), importing handlers now.

        Entries of ``registry.errors`` (a partial load) are left out and listed in
        ``refused``; if nothing at all is left to run, the first one is raised."""
        base = Path(registry.path).resolve().parent
        tasks: dict[str, Task] = {}
        unrunnable: dict[str, str] = {}
        refused = {n: str(e) for n, e in registry.errors.items() if not kinds or n in kinds}
        for spec in registry:
            if kinds and spec.name not in kinds:
                continue
            problem = run_as_problem(spec.user, spec.sources, spec.command)
            if problem:  # the loader refuses these; a JobSpec built otherwise is held too
                unrunnable[spec.name] = f"key 'user': {problem}"
                continue
            if spec.user and spec.command is not None:
                try:
                    lookup(spec.user)
                except IdentityError as exc:
                    unrunnable[spec.name] = str(exc)
                    continue
            tasks[spec.name] = _registry_task(registry.path, base, spec)
        for kind, entry in registered_handlers().items():  # after imports above registered them
            if kinds and kind not in kinds:
                continue
            if kind in tasks:
                if tasks[kind].func is not entry.func:
                    raise ConfigError(
                        f"{registry.path}: job {kind!r} is also registered with @handler "
                        f"({entry.func.__module__}.{entry.func.__qualname__}); keep one"
                    )
                continue
            tasks[kind] = Task(kind, entry.backoff, entry.timeout, func=entry.func)
        if refused and not tasks and not unrunnable:
            raise registry.errors[next(iter(refused))]
        missing = [
            k for k in (kinds or ()) if k not in tasks and k not in unrunnable and k not in refused
        ]
        if missing:
            raise UsageError(
                f"--kinds: {', '.join(missing)} not in {registry.path} and no @handler "
                "registered for it (import the module with --import)"
            )

        def attempts(name: str) -> int:  # a chain to a refused entry: the default until fixed
            spec = registry.jobs.get(name)
            return spec.max_attempts if spec is not None else DEFAULT_MAX_ATTEMPTS

        chains = {
            spec.name: (
                tuple((n, attempts(n)) for n in spec.on_success),
                tuple((n, attempts(n)) for n in spec.on_failure),
            )
            for spec in registry
            if spec.on_success or spec.on_failure
        }
        return cls(registry.path, tasks, output_cap, kill_grace, rand, unrunnable, refused, chains)

    @classmethod
    def for_table(
        cls,
        registry: Registry,
        spec: TableSpec,
        *,
        output_cap: int = 8 * 1024,
        kill_grace: float = 5.0,
        rand: Callable[[], float] = random.random,
    ) -> Catalog:
        """The one task of ``worker --table``: the section's command or handler, run per row
        with the same runner, timeout, backoff and user switch as a job."""
        run = spec.run
        if run.user and run.command is not None:
            try:
                lookup(run.user)
            except IdentityError as exc:
                raise UsageError(f"[tables.{spec.name}]: cannot run as {run.user}: {exc}") from None
        base = Path(registry.path).resolve().parent
        task = replace(_registry_task(registry.path, base, run), table=spec.table)
        return cls(registry.path, {spec.name: task}, output_cap, kill_grace, rand)

    def limits(self) -> dict[str, int]:
        """Kinds whose registry entry caps how many run at once (``concurrency``, or 1 for an
        ``overlap`` rule)."""
        return {
            kind: limit
            for kind, task in self.tasks.items()
            if task.spec is not None and (limit := task.spec.max_running) is not None
        }

    def run(
        self, job: Job, worker_id: str, cancel: Cancel, so_far: OutputSoFar | None = None
    ) -> Outcome:
        """Run one claimed job and say how it went; never raises for the job's own failure.
        ``so_far``: where a command's output is readable while it runs."""
        task = self.tasks.get(job.kind)
        if task is None:
            return Outcome.failed(
                f"kind {job.kind!r} is not in the registry {self.registry_path} and has no "
                "@handler: nothing was run",
                terminal=True,
            )
        if task.spec is not None and task.spec.command is not None:
            spec = task.spec
            if task.table is not None:
                env = {**spec.env, ROW_KEY_ENV: str(job.payload), TABLE_ENV: task.table}
                spec = replace(spec, env=env)
            result = run_command(
                spec,
                job,
                cancel,
                output_cap=self.output_cap,
                kill_grace=self.kill_grace,
                cwd=task.cwd,
                so_far=so_far,
            )
            outcome = command_outcome(result, task.timeout)
        else:
            outcome = self._run_python(task, job, worker_id, cancel)
        return self._settle(task, job, cancel, outcome)

    def _run_python(self, task: Task, job: Job, worker_id: str, cancel: Cancel) -> Outcome:
        assert task.func is not None
        ctx = Context(
            job_id=job.id,
            kind=job.kind,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
            scheduled_for=job.scheduled_for,
            worker_id=worker_id,
            deadline=time.monotonic() + task.timeout if task.timeout else None,
            cancelled=cancel,
        )
        ok, error, output, terminal = call_handler(task.func, job.payload, ctx, self.output_cap)
        if ok:
            return Outcome.done(output)
        return Outcome.failed(error or "failed", output, terminal=terminal)

    def _settle(self, task: Task, job: Job, cancel: Cancel, outcome: Outcome) -> Outcome:
        if outcome.error is not None and len(outcome.error) > MAX_ERROR:
            outcome = replace(outcome, error=outcome.error[:MAX_ERROR] + " […]")
        if cancel.is_set() and (outcome.status in (FAILED, RELEASE)):
            # Stopped by us, not by its own fault: give it back (shutdown) or leave it to the
            # worker that owns it now (lease lost). A Python handler that returned success
            # despite the cancel keeps its success.
            return Outcome.lost() if cancel.reason == LEASE_LOST else Outcome.release()
        if outcome.status == FAILED and not outcome.terminal and job.attempts < job.max_attempts:
            return replace(outcome, retry_in=retry_delay(task.backoff, job.attempts, self.rand))
        chain = self.chains.get(job.kind)
        if chain is not None:
            then = (
                chain[0] if outcome.status == DONE else chain[1] if outcome.status == FAILED else ()
            )
            if then:
                return replace(outcome, then=then)
        return outcome


def _registry_task(path: str, base: Path, spec: JobSpec) -> Task:
    if spec.handler is not None:
        try:
            func = load_handler(spec.handler)
        except Exception as exc:
            raise ConfigError(
                f"{path}: job {spec.name!r}: key 'handler': cannot load {spec.handler!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        return Task(spec.name, spec.backoff, spec.timeout, spec=spec, func=func)
    cwd = str(base / spec.cwd) if spec.cwd else None
    return Task(spec.name, spec.backoff, spec.timeout, spec=spec, cwd=cwd)
