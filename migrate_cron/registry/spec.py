"""What a registry holds once read: jobs, business tables, notify settings, and the error of
one entry that cannot be used. Plain frozen values, so every reader (worker, scheduler,
``enqueue``, ``migrate``) shares one meaning of each key; the loader builds them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from migrate_cron.errors import ConfigError, UnknownJob
from migrate_cron.registry.notify_targets import DEFAULT_EVENTS, NotifySettings, Target
from migrate_cron.vocabulary import Mode, NotifyEvent, Overlap, Policy

POLICIES = tuple(Policy)
# Bounds keep every value inside what the database columns and timedelta can hold.
MAX_ATTEMPTS_LIMIT = 1000
MAX_BACKFILL_LIMIT = 100_000
MAX_SECONDS = 366 * 86400.0
MODES = tuple(Mode)
OVERLAPS = (Overlap.WAIT, Overlap.SKIP)
MAX_CONCURRENCY = 10_000


@dataclass(frozen=True)
class Backoff:
    """Full-jitter exponential backoff: a random delay in [0, min(cap, base * 2**attempt)]."""

    base: float = 10.0
    cap: float = 3600.0


@dataclass(frozen=True)
class Source:
    """The crontab line a job was generated from, kept byte for byte for rollback."""

    file: str
    line: int
    text: str
    user: str | None = None
    #: The host the crontab came from (``HOST:PATH`` given to ``generate registry``).
    host: str | None = None

    @property
    def label(self) -> str:
        """How commands and ``[[jobs.NAME.migrations]]`` name this origin: ``HOST:FILE``."""
        return f"{self.host}:{self.file}" if self.host else self.file


@dataclass(frozen=True)
class Migration:
    """A switch made by ``migrate-cron migrate``: what ``rollback`` restores and ``verify``
    counts from. ``line`` is the crontab line as migrate wrote it (found again at rollback),
    ``crontab`` the file it wrote, ``previous_mode`` the mode before the first switch."""

    previous_mode: str
    crontab: str
    line: str
    switched_at: datetime
    installed: bool = False
    #: The label of the origin this switch rewrote (None: the job's only origin).
    origin: str | None = None


@dataclass(frozen=True)
class JobSpec:
    name: str
    command: str | None = None
    handler: str | None = None
    schedule: str | None = None
    timezone: str = "UTC"
    shell: str = "/bin/sh"
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    #: Where the command runs when its directory (``cwd``, else HOME) does not exist at run
    #: time: cron's own directory under Debian's cron and busybox (``generate`` writes it).
    #: None: such a run fails at once, not retried, as cronie does not run it.
    cwd_fallback: str | None = None
    stdin: str | None = None
    timeout: float | None = None
    max_attempts: int = 5
    backoff: Backoff = field(default_factory=Backoff)
    policy: Policy = Policy.SKIP
    max_backfill: int = 10
    misfire_grace: float = 60.0
    mode: Mode = Mode.CRON
    #: At most this many jobs of this kind run at once, over every worker and host (the
    #: claim enforces it); None: no limit.
    concurrency: int | None = None
    #: A scheduled slot that comes due while a run of this job is still running: "skip" records
    #: it as skipped (like ``flock -n``), "wait" enqueues it to run after. Either means the job
    #: never runs twice at once (``concurrency`` 1 unless set); None: no rule.
    overlap: Overlap | None = None
    #: Where failure (etc.) notifications go: the ``notify`` key, else cron's MAILTO rule.
    notify_targets: tuple[Target, ...] = ()
    #: Which events notify: failed (the final attempt), retrying, output, recovered.
    notify_on: tuple[NotifyEvent, ...] = DEFAULT_EVENTS
    #: Jobs enqueued in the transaction that records this job's success / final failure,
    #: with its slot and a ref naming it (a replayed outcome enqueues nothing twice).
    on_success: tuple[str, ...] = ()
    on_failure: tuple[str, ...] = ()
    #: Who the command runs as (setuid/setgid/initgroups, HOME/LOGNAME/USER from passwd), as
    #: cron ran the line; None: the worker's own user.
    user: str | None = None
    #: Every crontab line this job stands for: one per host or file it ran in.
    sources: tuple[Source, ...] = ()
    #: One per origin ``migrate`` switched (an origin not listed still runs from cron).
    migrations: tuple[Migration, ...] = ()

    @property
    def max_running(self) -> int | None:
        """How many of this job may run at once: ``concurrency``, else 1 when ``overlap`` is
        set (it promises no overlap), else no limit."""
        if self.concurrency is not None:
            return self.concurrency
        return 1 if self.overlap is not None else None

    @property
    def source(self) -> Source | None:
        """The first origin: the only one of a line that lived in one place."""
        return self.sources[0] if self.sources else None

    @property
    def migration(self) -> Migration | None:
        """The first switch: the only one of a single-origin job."""
        return self.migrations[0] if self.migrations else None

    def migration_of(self, source: Source) -> Migration | None:
        """The switch that rewrote ``source``'s line, or None while cron still runs it."""
        for m in self.migrations:
            if m.origin == source.label or (m.origin is None and source == self.sources[0]):
                return m
        return None


#: Known names listed in an unknown-job error; more are counted, not listed.
LISTED_NAMES = 8


def unknown_job_message(name: str, path: str, known: Iterable[str]) -> str:
    """One line: the closest names first ("did you mean"), then a few of the others."""
    names = sorted(known)
    if not names:
        return f"no job {name!r} in {path} (it has no jobs: `migrate-cron generate registry`)"
    return f"no job {name!r} in {path}{_nearest(name, names, 'jobs')}"


def _nearest(name: str, names: list[str], what: str) -> str:
    """``; did you mean 'x'? (known jobs: a, b and 3 more)`` for a name not among ``names``."""
    import difflib

    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    shown = ", ".join(names[:LISTED_NAMES])
    more = f" and {len(names) - LISTED_NAMES} more" if len(names) > LISTED_NAMES else ""
    return f"{hint} (known {what}: {shown}{more})"


#: A status value as an application stores it: text ('pending') or a small integer code.
StatusValue = str | int


@dataclass(frozen=True)
class TableSpec:
    """A business table whose rows workers claim directly (``[tables.NAME]``).

    The application keeps its own table and status values; migrate-cron adds only the lease
    columns (``locked_by``, ``locked_until``, ``attempts``, ``last_error``) and moves the status
    between the four values named here. ``run`` is the command or handler run per row, with
    every execution key (shell, env, cwd, timeout, max_attempts, backoff, user) of a job.
    """

    name: str
    table: str
    key: str
    status: str
    ready: StatusValue
    processing: StatusValue
    done: StatusValue
    failed: StatusValue
    run: JobSpec
    order_by: str | None = None
    batch: int = 10
    lease: float = 60.0


def unknown_table_message(name: str, path: str, known: Iterable[str]) -> str:
    """One line: the closest [tables.NAME] first ("did you mean"), then the others."""
    names = sorted(known)
    if not names:
        return f"no [tables.{name}] in {path} (it describes no table: see docs/patterns)"
    return f"no table {name!r} in {path}{_nearest(name, names, 'tables')}"


class EntryError(ConfigError):
    """One registry entry cannot be used: the others load (``load_registry(partial=True)``).
    The message names the file (and the line, where the text gives it), the entry and the
    key, e.g. ``migrate-cron.toml:12: job 'b': key 'backoff': must be a table``."""

    def __init__(
        self, path: str, where: str, key: str | None, reason: str, line: int | None = None
    ) -> None:
        self.path, self.where, self.key, self.reason, self.line = path, where, key, reason, line
        at = f"{path}:{line}" if line is not None else path
        keyed = f"key {key!r}: " if key is not None else ""
        super().__init__(f"{at}: {where}: {keyed}{reason}")

    def at_line(self, line: int | None) -> EntryError:
        return EntryError(self.path, self.where, self.key, self.reason, line)


@dataclass(frozen=True)
class Registry:
    path: str
    jobs: Mapping[str, JobSpec]
    notify: NotifySettings = field(default_factory=NotifySettings)
    tables: Mapping[str, TableSpec] = field(default_factory=dict)
    #: Entries that did not load, by name (only with ``load_registry(partial=True)``; a
    #: strict load raises the first). ``get`` raises an entry's own error.
    errors: Mapping[str, EntryError] = field(default_factory=dict)

    def get(self, name: str) -> JobSpec:
        try:
            return self.jobs[name]
        except KeyError:
            if name in self.errors:
                raise self.errors[name] from None
            raise UnknownJob(unknown_job_message(name, self.path, self.jobs)) from None

    def table(self, name: str) -> TableSpec:
        """The ``[tables.NAME]`` section; a typo is a usage error naming the closest ones."""
        try:
            return self.tables[name]
        except KeyError:
            raise UnknownJob(unknown_table_message(name, self.path, self.tables)) from None

    def __iter__(self) -> Iterator[JobSpec]:
        return iter(self.jobs.values())

    def __len__(self) -> int:
        return len(self.jobs)

    def scheduled(self) -> list[JobSpec]:
        return [j for j in self.jobs.values() if j.schedule]
