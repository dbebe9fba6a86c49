"""The job registry: ``migrate-cron.toml``, one ``[jobs.NAME]`` table per job.

The registry is code under review: it is the only source of commands the worker runs. A
database row names a job (its ``kind``) and carries data; it never carries a command.

Format (every key but the command/handler is optional)::

    [defaults]                 # applies to every job unless the job sets the key
    timezone = "Europe/Berlin"
    max_attempts = 5

    [jobs.invoices-export]
    schedule = "30 2 * * *"    # Vixie cron syntax or @macro; omit for queue-only kinds
    timezone = "Europe/Berlin" # IANA zone the schedule is read in (CRON_TZ)
    command = "php artisan invoices:export"   # run as SHELL -c command, like cron
    shell = "/bin/sh"
    env = { MAILTO = "ops@example.com" }      # crontab env lines that applied
    cwd = "/var/www/shop"
    cwd_fallback = "/var/spool/cron"  # where it runs if cwd (else HOME) is missing at run time
    stdin = ""                 # text after the first unescaped % in the crontab line
    timeout = 3600             # seconds; the whole process group is killed
    max_attempts = 5
    backoff = { base = 10.0, cap = 3600.0 }
    policy = "run-once"        # missed slots: skip | run-once | backfill
    max_backfill = 10
    misfire_grace = 60         # seconds a slot may be late and still be on time
    mode = "cron"              # cron | enqueue | scheduler (who fires it now)
    concurrency = 1            # at most this many running at once, over every worker and host
    overlap = "skip"           # one run at a time; a slot due meanwhile: skip (flock -n) | wait
    notify = ["mail:ops@example.com", "webhook:https://…", "command:/usr/local/bin/page"]
    notify_on = ["failed"]     # failed (default) | retrying | output | recovered
    on_success = ["send-invoices"]   # enqueued with this job's success (same transaction)
    on_failure = ["alert-finance"]   # enqueued when no retry is left
    # without `notify`: cron's rule — MAILTO's addresses, none for MAILTO="", else the user

    [notify]                   # how mail leaves: smtp://HOST:PORT or smtps://… (auth from
    smtp = "smtp://mail:25"    # MIGRATE_CRON_SMTP_USER/_PASSWORD); default /usr/sbin/sendmail -t
    # handler = "myapp.jobs:export"   # instead of command: a Python callable
    # [jobs.invoices-export.source]   # where the line came from (for migrate/rollback)
    # file = "/etc/cron.d/shop"; line = 12; text = "30 2 * * * www-data php …"; host = "web1"
    # [jobs.invoices-export.migration]  # written by `migrate`, removed by `rollback`
    # previous_mode = "cron"; crontab = "/etc/cron.d/shop"; line = "30 2 * * * www-data /…"
    # switched_at = 2025-03-01T09:12:00Z; installed = false

A business table the worker claims rows from directly (``worker --table NAME``; the columns
claiming needs come from ``generate migration --claim-table NAME``)::

    [tables.notifications]
    table = "notifications"    # the SQL table (default: the section name)
    key = "id"                 # its primary key: the row's identity in MIGRATE_CRON_ROW_KEY
    status = "status"          # the status column and the values that mean …
    ready = "pending"          # … waiting to be processed,
    processing = "sending"     # … claimed by a worker (set by the claim),
    done = "sent"              # … processed,
    failed = "failed"          # … out of attempts (last_error says why)
    order_by = "created_at"    # oldest first (default: the key)
    batch = 20                 # rows claimed per query
    lease = 60                 # seconds a claim holds without a heartbeat
    command = "php bin/send-notification.php"   # or handler = "app.notify:send" (key as argument)
    # shell, env, cwd, timeout, max_attempts, backoff, user: as for a job

A line that ran on several hosts (or in several files) is one job with several origins: an
array ``[[jobs.NAME.sources]]`` instead of the one ``[jobs.NAME.source]`` table, and one
``[[jobs.NAME.migrations]]`` entry per origin ``migrate`` switched, each naming its origin
(``origin = "web1:/etc/cron.d/shop"``, the origin's ``label``). Both spellings load.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from migrate_cron.crontab.line_limits import command_too_long
from migrate_cron.errors import ConfigError, UnknownJob, UsageError
from migrate_cron.notify.targets import (
    DEFAULT_EVENTS,
    NotifySettings,
    Target,
    parse_events,
    parse_settings,
    parse_targets,
)
from migrate_cron.vocabulary import Mode, Policy

POLICIES = tuple(Policy)
# Bounds keep every value inside what the database columns and timedelta can hold.
MAX_ATTEMPTS_LIMIT = 1000
MAX_BACKFILL_LIMIT = 100_000
MAX_SECONDS = 366 * 86400.0
MODES = tuple(Mode)
OVERLAPS = ("wait", "skip")
MAX_CONCURRENCY = 10_000
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")


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
    policy: str = "skip"
    max_backfill: int = 10
    misfire_grace: float = 60.0
    mode: str = "cron"
    #: At most this many jobs of this kind run at once, over every worker and host (the
    #: claim enforces it); None: no limit.
    concurrency: int | None = None
    #: A scheduled slot that comes due while a run of this job is still running: "skip" records
    #: it as skipped (like ``flock -n``), "wait" enqueues it to run after. Either means the job
    #: never runs twice at once (``concurrency`` 1 unless set); None: no rule.
    overlap: str | None = None
    #: Where failure (etc.) notifications go: the ``notify`` key, else cron's MAILTO rule.
    notify_targets: tuple[Target, ...] = ()
    #: Which events notify: failed (the final attempt), retrying, output, recovered.
    notify_on: tuple[str, ...] = DEFAULT_EVENTS
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
    import difflib

    names = sorted(known)
    if not names:
        return f"no job {name!r} in {path} (it has no jobs: `migrate-cron generate registry`)"
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    shown = ", ".join(names[:LISTED_NAMES])
    more = f" and {len(names) - LISTED_NAMES} more" if len(names) > LISTED_NAMES else ""
    return f"no job {name!r} in {path}{hint} (known jobs: {shown}{more})"


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
    import difflib

    names = sorted(known)
    if not names:
        return f"no [tables.{name}] in {path} (it describes no table: see docs/patterns)"
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    shown = ", ".join(names[:LISTED_NAMES])
    more = f" and {len(names) - LISTED_NAMES} more" if len(names) > LISTED_NAMES else ""
    return f"no table {name!r} in {path}{hint} (known tables: {shown}{more})"


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


_KEYS = {
    "command": str,
    "handler": str,
    "schedule": str,
    "timezone": str,
    "shell": str,
    "user": str,
    "env": dict,
    "cwd": str,
    "cwd_fallback": str,
    "stdin": str,
    "timeout": (int, float),
    "max_attempts": int,
    "backoff": dict,
    "policy": str,
    "max_backfill": int,
    "misfire_grace": (int, float),
    "mode": str,
    "concurrency": int,
    "overlap": str,
    "notify": list,
    "notify_on": list,
    "on_success": list,
    "on_failure": list,
    "source": dict,
    "sources": list,
    "migration": dict,
    "migrations": list,
}


def load_registry(path: str | Path, *, partial: bool = False) -> Registry:
    """Read and validate a registry file; errors name the file, the line, the job and the key.

    ``partial``: an entry's error is that entry's — the others load and the bad ones are in
    ``Registry.errors`` (the worker and the scheduler run the rest; ``verify`` fails on
    them). Otherwise the first bad entry is raised. Errors of the file itself (unreadable,
    not UTF-8, TOML syntax, ``[defaults]``, ``[notify]``, ``[tables]``) are always raised."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise _no_registry(p) from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    return parse_registry(data, str(p), partial=partial, source=raw)


#: Keys that describe one job's lines and switches: never inherited from [defaults].
_PER_JOB = ("source", "sources", "migration", "migrations")


def parse_registry(
    data: Mapping[str, Any],
    path: str = "migrate-cron.toml",
    *,
    partial: bool = False,
    source: bytes | None = None,
) -> Registry:
    """``data`` (parsed TOML) as a registry; ``source`` (the file's bytes) lets an entry's
    error name its line. See ``load_registry`` for ``partial``."""
    unknown_top = set(data) - {"jobs", "defaults", "notify", "tables"}
    if unknown_top:
        raise ConfigError(f"{path}: unknown top-level key(s) {sorted(unknown_top)}")
    raw_notify = data.get("notify", {})
    if not isinstance(raw_notify, dict):
        raise ConfigError(f"{path}: [notify] must be a table")
    try:
        notify = parse_settings(raw_notify)
    except ValueError as exc:
        raise ConfigError(f"{path}: [notify]: {exc}") from None
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}: [defaults] must be a table")
    _check_keys(path, "[defaults]", defaults)
    jobs_raw = data.get("jobs", {})
    if not isinstance(jobs_raw, dict):
        raise ConfigError(f"{path}: [jobs] must be a table of [jobs.NAME] tables")
    jobs: dict[str, JobSpec] = {}
    errors: dict[str, EntryError] = {}
    for name, table in jobs_raw.items():
        try:
            jobs[name] = job_entry(path, name, table, defaults)
        except EntryError as exc:
            errors[name] = exc
    for spec in list(jobs.values()):
        for key, names in (("on_success", spec.on_success), ("on_failure", spec.on_failure)):
            # A chain to an entry that did not load still names a job: it is enqueued and
            # waits, unclaimed, until that entry is fixed.
            unknown = [n for n in names if n not in jobs and n not in errors]
            if unknown and spec.name in jobs:
                errors[spec.name] = EntryError(
                    path, f"job {spec.name!r}", key, f"no job {', '.join(unknown)} in the registry"
                )
                del jobs[spec.name]
    if errors and source is not None:
        errors = _with_lines(source, errors)
    if errors and not partial:
        raise next(iter(errors.values()))
    tables = _tables(path, data.get("tables", {}), defaults)
    return Registry(path, jobs, notify, tables, errors)


def job_entry(path: str, name: str, table: Any, defaults: Mapping[str, Any]) -> JobSpec:
    """One ``[jobs.NAME]`` table, with ``[defaults]`` under it, as a validated job; raises
    ``EntryError``."""
    if not isinstance(table, dict):
        raise EntryError(path, f"job {name!r}", None, f"must be a table [jobs.{name}]")
    merged = {
        **{k: v for k, v in defaults.items() if k not in _PER_JOB},
        **table,
    }
    return _job(path, name, merged)


def _with_lines(source: bytes, errors: Mapping[str, EntryError]) -> dict[str, EntryError]:
    """The errors with the line of the key each names (one pass over the text's headers)."""
    from migrate_cron.registry_text import entry_lines

    lines = entry_lines(source, {name: exc.key for name, exc in errors.items()})
    return {name: exc.at_line(lines.get(name)) for name, exc in errors.items()}


def load_job(path: str | Path, name: str) -> JobSpec:
    """Job ``name`` alone, for ``enqueue NAME``: its cost does not grow with the registry.

    ``registry_text`` cuts the job's tables (and ``[defaults]``) out of the file and only
    those are parsed and validated, as ``load_registry`` would. When the scan cannot be sure
    — or finds no table of that name — the whole file is parsed (``partial``), so the answer
    is always the full loader's: the entry, its own ``EntryError``, ``UnknownJob``, or the
    file's error. Not checked here: that ``on_success``/``on_failure`` name jobs of the
    registry (other entries; enqueueing does not use them)."""
    from migrate_cron import registry_text

    p = Path(path)
    try:
        data = registry_text.open_bytes(p)
    except FileNotFoundError:
        raise _no_registry(p) from None
    except OSError as exc:
        raise UsageError(f"{p}: cannot read: {exc.strerror or exc}") from None
    found = registry_text.find_job(data, name)
    text = found.text() if found is not None and found.job else None
    if found is not None and text is not None:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            doc = None  # cut inside a value, or a syntax error: the whole file says which
        if doc is not None:
            defaults = doc.get("defaults", {})
            if isinstance(defaults, dict):
                _check_keys(str(p), "[defaults]", defaults)
                try:
                    return job_entry(str(p), name, doc["jobs"][name], defaults)
                except EntryError as exc:
                    raise exc.at_line(found.line_of(exc.key)) from None
    return load_registry(p, partial=True).get(name)


def _no_registry(p: Path) -> UsageError:
    return UsageError(
        f"{p}: no registry file (create one with `migrate-cron generate registry CRONTAB`)"
    )


def _check_keys(path: str, where: str, table: Mapping[str, Any]) -> None:
    for key, value in table.items():
        if key not in _KEYS:
            raise EntryError(path, where, None, f"unknown key {key!r}")
        expected = _KEYS[key]
        if isinstance(value, bool) or not isinstance(value, expected):  # type: ignore[arg-type]
            want = _TYPE_NAMES.get(expected, "a number")  # type: ignore[call-overload]
            raise EntryError(
                path, where, key, f"must be {want}, not {_shown(value)}{key_example(key)}"
            )


_TYPE_NAMES = {str: "a string", int: "an integer", dict: "a table", list: "an array"}

#: One right spelling of each ``[jobs.NAME]`` key, shown when a value has the wrong form (the
#: reference is docs/registry.md; a test keeps the two in step).
KEY_EXAMPLES: dict[str, str] = {
    "command": 'command = "cd /srv/shop && php artisan invoices:export"',
    "handler": 'handler = "shop.tasks:export_invoices"',
    "schedule": 'schedule = "30 2 * * *"',
    "timezone": 'timezone = "Europe/Berlin"',
    "shell": 'shell = "/bin/bash"',
    "user": 'user = "www-data"',
    "env": 'env = { PATH = "/usr/local/bin:/usr/bin:/bin", APP_ENV = "prod" }',
    "cwd": 'cwd = "/srv/shop"',
    "cwd_fallback": 'cwd_fallback = "/var/spool/cron"',
    "stdin": 'stdin = "line one\\nline two\\n"',
    "timeout": "timeout = 3600",
    "max_attempts": "max_attempts = 5",
    "backoff": "backoff = { base = 30, cap = 3600 }",
    "policy": 'policy = "run-once"',
    "max_backfill": "max_backfill = 10",
    "misfire_grace": "misfire_grace = 60",
    "mode": 'mode = "enqueue"',
    "concurrency": "concurrency = 1",
    "overlap": 'overlap = "skip"',
    "notify": 'notify = ["mail:ops@example.com"]',
    "notify_on": 'notify_on = ["failed"]',
    "on_success": 'on_success = ["invoices-upload"]',
    "on_failure": 'on_failure = ["page-ops"]',
    "source": "[jobs.NAME.source] (written by `generate registry`)",
    "sources": "[[jobs.NAME.sources]] (written by `generate registry`)",
    "migration": "[jobs.NAME.migration] (written by `migrate`)",
    "migrations": "[[jobs.NAME.migrations]] (written by `migrate`)",
}


def key_example(key: str | None) -> str:
    """`` (e.g. backoff = { base = 30, cap = 3600 })`` for a key with a known form."""
    example = KEY_EXAMPLES.get(key or "")
    return f" (e.g. {example})" if example else ""


def _shown(value: Any) -> str:
    """A value in an error line: its repr, cut (a 1 MB string is not a message)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _job(path: str, name: str, t: dict[str, Any], section: str = "job") -> JobSpec:
    where = f"{section} {name!r}"
    if not name or not set(name) <= _NAME_CHARS or len(name) > 200:
        raise EntryError(
            path, where, None, "names use letters, digits and - _ . : (at most 200 characters)"
        )
    _check_keys(path, where, t)

    def bad(key: str, reason: str) -> EntryError:
        return EntryError(path, where, key, reason + key_example(key))

    if bool(t.get("command")) == bool(t.get("handler")):
        raise bad("command", "set exactly one of 'command' or 'handler'")
    command = t.get("command")
    if isinstance(command, str) and command_too_long(command):
        raise bad("command", command_too_long(command) or "")
    for key in ("command", "handler", "shell", "cwd"):
        if "\0" in t.get(key, ""):
            raise bad(key, f"holds a NUL byte: {NUL_REASON}")
    if t.get("shell") == "":
        raise bad("shell", "empty: name the shell cron ran the line with (default /bin/sh)")
    handler = t.get("handler")
    if handler is not None and (":" not in handler or handler.startswith(":")):
        raise bad("handler", f"{handler!r} must look like 'package.module:function'")
    tz = t.get("timezone", "UTC")
    _check_timezone(tz, bad)
    schedule = t.get("schedule")
    if schedule is not None:
        _check_schedule(schedule, tz, bad)
    env = t.get("env", {})
    for k, v in env.items():
        if not isinstance(v, str):
            raise bad("env", f"value of {k!r} must be a string")
        problem = env_problem(k, v)
        if problem:
            raise bad("env", problem)
    policy = t.get("policy", "skip")
    if policy not in POLICIES:
        raise bad("policy", f"{policy!r} is not one of {', '.join(POLICIES)}")
    mode = t.get("mode", "cron")
    if mode not in MODES:
        raise bad("mode", f"{mode!r} is not one of {', '.join(MODES)}")
    max_attempts = t.get("max_attempts", 5)
    if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise bad("max_attempts", f"must be between 1 and {MAX_ATTEMPTS_LIMIT}")
    timeout = t.get("timeout")
    if timeout is not None and not (math.isfinite(timeout) and 0 < timeout <= MAX_SECONDS):
        raise bad("timeout", f"must be a positive number of seconds up to {MAX_SECONDS:.0f}")
    backoff = _backoff(t.get("backoff", {}), bad)
    if not 0 <= t.get("max_backfill", 10) <= MAX_BACKFILL_LIMIT:
        raise bad("max_backfill", f"must be between 0 and {MAX_BACKFILL_LIMIT}")
    concurrency = t.get("concurrency")
    if concurrency is not None and not 1 <= concurrency <= MAX_CONCURRENCY:
        raise bad("concurrency", f"must be between 1 and {MAX_CONCURRENCY}")
    overlap = t.get("overlap")
    if overlap is not None and overlap not in OVERLAPS:
        raise bad("overlap", f"{overlap!r} is not one of {', '.join(OVERLAPS)}")
    if overlap is not None and concurrency is not None and concurrency > 1:
        raise bad(
            "overlap",
            f"overlap promises one run at a time, concurrency = {concurrency} allows more: "
            "keep one of them",
        )
    try:
        targets = parse_targets(t.get("notify"), env)
    except ValueError as exc:
        raise bad("notify", str(exc)) from None
    try:
        notify_on = parse_events(t.get("notify_on"))
    except ValueError as exc:
        raise bad("notify_on", str(exc)) from None
    grace = t.get("misfire_grace", 60)
    if not (math.isfinite(grace) and 0 <= grace <= MAX_SECONDS):
        raise bad("misfire_grace", f"must be between 0 and {MAX_SECONDS:.0f} seconds")
    return JobSpec(
        name=name,
        command=t.get("command"),
        handler=handler,
        schedule=schedule,
        timezone=tz,
        shell=t.get("shell", "/bin/sh"),
        env=dict(env),
        cwd=t.get("cwd"),
        cwd_fallback=_fallback(t.get("cwd_fallback"), bad),
        stdin=t.get("stdin"),
        timeout=float(timeout) if timeout is not None else None,
        max_attempts=max_attempts,
        backoff=backoff,
        policy=policy,
        max_backfill=t.get("max_backfill", 10),
        misfire_grace=float(t.get("misfire_grace", 60)),
        mode=mode,
        concurrency=concurrency,
        overlap=overlap,
        notify_targets=targets,
        notify_on=notify_on,
        on_success=_names(t.get("on_success"), "on_success", bad),
        on_failure=_names(t.get("on_failure"), "on_failure", bad),
        user=(user := _user(t.get("user"), t.get("handler"), bad)),
        sources=(sources := _run_as(user, command, _sources(t, bad), bad)),
        migrations=_migrations(t, sources, bad),
    )


#: Why a value with a NUL byte is refused: no program can be started with one.
NUL_REASON = (
    "a program's arguments, environment and directory are C strings, so no run could start "
    "(every attempt would fail at once)"
)


def env_problem(name: str, value: str) -> str | None:
    """Why ``name=value`` cannot be put in a process's environment, or None."""
    if not name or "=" in name or "\0" in name:
        return (
            f"variable name {name!r} cannot be set: a name is not empty and holds no '=' or "
            "NUL byte"
        )
    if "\0" in value:
        return f"value of {name!r} holds a NUL byte: {NUL_REASON}"
    return None


def run_as_problem(user: str | None, sources: Iterable[Source], command: str | None) -> str | None:
    """Why a command may not run as ``user`` given the lines it came from, or None.

    cron ran a system crontab's line as its user field (``source.user``): a job whose line
    ran as ``nobody`` must never run as the worker's root because a ``user`` key went
    missing in an edit. A Python handler (no ``command``) is the application's code, not the
    line's: it runs in the worker, as the worker's user, and is not held to this."""
    if command is None:
        return None
    for src in sources:
        if src.user is not None and src.user != user:
            if user is None:
                return (
                    f"missing: cron ran the line ({src.label}:{src.line}) as {src.user!r}, and "
                    f"a job never runs as another user than its line did: add user = "
                    f'"{src.user}"'
                )
            return (
                f"{user!r}, but cron ran the line ({src.label}:{src.line}) as {src.user!r}: a "
                "job never runs as another user than its line did (to move it to another "
                "user, change the crontab line and generate again)"
            )
    return None


def _run_as(
    user: str | None, command: str | None, sources: tuple[Source, ...], bad: Any
) -> tuple[Source, ...]:
    problem = run_as_problem(user, sources, command)
    if problem:
        raise bad("user", problem)
    return sources


#: Keys of a ``[tables.NAME]`` section that describe the table; the others (``_TABLE_RUN``)
#: describe what runs per row, exactly as for a job.
_TABLE_KEYS = {
    "table": str,
    "key": str,
    "status": str,
    "ready": (str, int),
    "processing": (str, int),
    "done": (str, int),
    "failed": (str, int),
    "order_by": str,
    "batch": int,
    "lease": (int, float),
}
_TABLE_RUN = ("command", "handler", "shell", "env", "cwd", "cwd_fallback", "timeout",
              "max_attempts", "backoff", "user")  # fmt: skip
_STATUS_KEYS = ("ready", "processing", "done", "failed")
#: Identifiers go into SQL as quoted names: plain ones only, so no quoting rule of any
#: dialect matters (PostgreSQL cuts names at 63 bytes).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
MAX_TABLE_BATCH = 10_000


def _tables(path: str, raw: Any, defaults: Mapping[str, Any]) -> dict[str, TableSpec]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [tables] must be a table of [tables.NAME] tables")
    inherited = {k: v for k, v in defaults.items() if k in _TABLE_RUN}
    return {name: _table(path, name, body, inherited) for name, body in raw.items()}


def _table(path: str, name: str, t: Any, inherited: Mapping[str, Any]) -> TableSpec:
    where = f"table {name!r}"

    def bad(key: str, reason: str) -> ConfigError:
        return ConfigError(f"{path}: {where}: key {key!r}: {reason}")

    if not isinstance(t, dict):
        raise ConfigError(f"{path}: {where}: must be a table [tables.{name}]")
    own = {k: v for k, v in t.items() if k in _TABLE_KEYS}
    for key, value in own.items():
        expected = _TABLE_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, expected):  # type: ignore[arg-type]
            if isinstance(expected, type):
                raise bad(key, f"must be a {expected.__name__}")
            raise bad(key, "must be text or an integer" if key in _STATUS_KEYS else "a number")
    unknown = sorted(k for k in t if k not in _TABLE_KEYS and k not in _TABLE_RUN)
    if unknown:
        raise ConfigError(f"{path}: {where}: unknown key(s) {unknown}")
    for key in ("key", "status", *_STATUS_KEYS):
        if key not in own:
            raise bad(key, "missing (a table needs key, status, ready, processing, done, failed)")
    for key in ("table", "key", "status", "order_by"):
        value = own.get(key, name if key == "table" else None)
        if value is not None and not _IDENTIFIER.fullmatch(value):
            raise bad(key, f"{value!r} is not a plain SQL name (letters, digits, _)")
    values = [own[k] for k in _STATUS_KEYS]
    if len(set(values)) != len(values):
        raise bad("ready", "ready, processing, done and failed must be four different values")
    batch = own.get("batch", 10)
    if not 1 <= batch <= MAX_TABLE_BATCH:
        raise bad("batch", f"must be between 1 and {MAX_TABLE_BATCH}")
    lease = float(own.get("lease", 60.0))
    if not (math.isfinite(lease) and 1 <= lease <= MAX_SECONDS):
        raise bad("lease", f"must be between 1 and {MAX_SECONDS:.0f} seconds")
    run_keys = {**inherited, **{k: v for k, v in t.items() if k in _TABLE_RUN}}
    run = _job(path, name, run_keys, section="table")
    return TableSpec(
        name=name,
        table=own.get("table", name),
        key=own["key"],
        status=own["status"],
        ready=own["ready"],
        processing=own["processing"],
        done=own["done"],
        failed=own["failed"],
        run=run,
        order_by=own.get("order_by"),
        batch=batch,
        lease=lease,
    )


def _names(raw: list[Any] | None, key: str, bad: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not all(isinstance(n, str) and n for n in raw):
        raise bad(key, "a list of job names")
    return tuple(raw)


#: A user name as useradd and cron's user field take it (never starting with '-').
_USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}\$?")


def _user(user: str | None, handler: str | None, bad: Any) -> str | None:
    if user is None:
        return None
    if not _USER_NAME.fullmatch(user):
        raise bad("user", f"{user!r} is not a user name")
    if handler is not None:
        raise bad(
            "user",
            "a Python handler runs inside the worker's process, as the worker's user: run "
            "the worker as that user instead",
        )
    return user


def _fallback(path: str | None, bad: Any) -> str | None:
    """``cwd_fallback``: an absolute directory (it stands for cron's own, whatever the
    registry's directory is)."""
    if path is not None and not path.startswith("/"):
        raise bad(
            "cwd_fallback",
            f'{path!r} is not an absolute directory; e.g. cwd_fallback = "/var/spool/cron"',
        )
    return path


def _backoff(raw: dict[str, Any], bad: Any) -> Backoff:
    extra = set(raw) - {"base", "cap"}
    if extra:
        raise bad("backoff", f"unknown key(s) {sorted(extra)}; use base and cap")
    base = raw.get("base", 10.0)
    cap = raw.get("cap", 3600.0)
    for key, value in (("base", base), ("cap", cap)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and 0 <= value <= MAX_SECONDS)
        ):
            raise bad("backoff", f"{key} must be a number of seconds from 0 to {MAX_SECONDS:.0f}")
    if cap < base:
        raise bad("backoff", "cap must be >= base")
    return Backoff(float(base), float(cap))


def _sources(t: Mapping[str, Any], bad: Any) -> tuple[Source, ...]:
    if "source" in t and "sources" in t:
        raise bad("sources", "set either [source] (one origin) or [[sources]], not both")
    if "source" in t:
        return (_source(t["source"], "source", bad),)
    raw = t.get("sources", [])
    sources = tuple(_source(item, "sources", bad) for item in raw)
    labels = [s.label for s in sources]
    for label in labels:
        if labels.count(label) > 1:
            raise bad("sources", f"two origins in {label}: one job has one line per file")
    return sources


#: A source table's keys: the type each must have, and whether it is required.
_SOURCE_KEYS: dict[str, tuple[type, bool]] = {
    "file": (str, True),
    "line": (int, True),
    "text": (str, True),
    "user": (str, False),
    "host": (str, False),
}


def _source(raw: Any, key: str, bad: Any) -> Source:
    if not isinstance(raw, Mapping):
        raise bad(key, "each origin must be a table with file, line, text")
    for field_name, (kind, required) in _SOURCE_KEYS.items():
        if field_name not in raw:
            if required:
                raise bad(key, f"missing {field_name!r} (needs file, line, text)")
            continue
        value = raw[field_name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise bad(key, f"{field_name} must be {_TYPE_NAMES[kind]}, not {_shown(value)}")
    unknown = sorted(set(raw) - set(_SOURCE_KEYS))
    if unknown:
        raise bad(key, f"unknown key(s) {unknown} (an origin has file, line, text, user, host)")
    if raw["line"] < 1:
        raise bad(key, f"line must be a line number (1 or more), not {raw['line']}")
    user = raw.get("user")
    if user is not None and not _USER_NAME.fullmatch(user):
        raise bad(key, f"user {user!r} is not a user name")
    return Source(
        file=raw["file"], line=raw["line"], text=raw["text"], user=user, host=raw.get("host")
    )


def _migrations(
    t: Mapping[str, Any], sources: tuple[Source, ...], bad: Any
) -> tuple[Migration, ...]:
    if "migration" in t and "migrations" in t:
        raise bad("migrations", "set either [migration] or [[migrations]], not both")
    raw = [t["migration"]] if "migration" in t else t.get("migrations", [])
    migrations = tuple(_migration(item, bad) for item in raw)
    if len(migrations) > 1 and any(m.origin is None for m in migrations):
        raise bad("migrations", "with several switches each must name its origin")
    labels = {s.label for s in sources}
    for m in migrations:
        if m.origin is not None and m.origin not in labels:
            raise bad("migrations", f"origin {m.origin!r} is none of the job's sources")
    return migrations


def _migration(raw: Any, bad: Any) -> Migration:
    if not isinstance(raw, Mapping):
        raise bad("migration", "must be a table")
    try:
        previous, crontab, line = raw["previous_mode"], raw["crontab"], raw["line"]
        switched_at = raw["switched_at"]
    except KeyError as exc:
        raise bad(
            "migration",
            f"missing {exc.args[0]!r} (needs previous_mode, crontab, line, switched_at)",
        ) from None
    if previous not in MODES:
        raise bad("migration", f"previous_mode {previous!r} is not one of {', '.join(MODES)}")
    if not isinstance(switched_at, datetime) or switched_at.tzinfo is None:
        raise bad("migration", "switched_at must be a TOML date-time with an offset")
    installed, origin = raw.get("installed", False), raw.get("origin")
    for field_name, value, ok in (
        ("crontab", crontab, isinstance(crontab, str)),
        ("line", line, isinstance(line, str)),
        ("installed", installed, isinstance(installed, bool)),
        ("origin", origin, origin is None or isinstance(origin, str)),
    ):
        if not ok:
            want = "true or false" if field_name == "installed" else "a string"
            raise bad("migration", f"{field_name} must be {want}, not {_shown(value)}")
    return Migration(
        previous_mode=previous,
        crontab=crontab,
        line=line,
        switched_at=switched_at,
        installed=installed,
        origin=origin,
    )


def _check_timezone(tz: str, bad: Any) -> None:
    from migrate_cron.crontab.timezone import unknown_zone_message, zone_exists

    if not zone_exists(tz):
        raise bad("timezone", unknown_zone_message(tz))


def _check_schedule(expr: str, tz: str, bad: Any) -> None:
    try:
        from migrate_cron.crontab.schedule import Schedule, ScheduleError
    except ImportError:  # parser not importable: fall back to croniter's own check
        from croniter import croniter

        if not expr.startswith("@") and not croniter.is_valid(expr):
            raise bad("schedule", f"{expr!r} is not a valid cron expression") from None
        return
    try:
        Schedule.parse(expr, tz)
    except ScheduleError as exc:
        raise bad("schedule", str(exc)) from None
