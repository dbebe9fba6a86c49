"""What ``migrate-cron enqueue NAME`` does for one registry job and one slot, without Typer.

Two front ends call it: the Typer command (``cli.enqueue``) and the lean path cron takes every
minute on every host (``cli.lean``). The work returns an ``Enqueued`` — what happened, the exit
code, the lines to say — and both front ends say it the same way (``cli.enqueue_output``):
same messages, same spool, same exit codes. One line is said here: when the deadline ends the
process from the watchdog's thread, nobody is left to return to.

Every import below stays inside the function body or is cheap (stdlib, ``config``,
``errors``, ``vocabulary``): this module is on the path of a process that lives for a
fraction of a second.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.vocabulary import Overlap, SlotOutcome

if TYPE_CHECKING:
    from migrate_cron.producer.spool import Placed, Spool, SpooledSlot
    from migrate_cron.store import SlotWriter

#: ``enqueue`` gives up on the database after this long, spools the slot and exits 75, whatever
#: the database does (a stalled connection cannot be bounded by socket timeouts alone).
DEADLINE_SECONDS = 25.0
EX_TEMPFAIL = 75


@dataclass(frozen=True)
class Enqueued:
    """What one ``enqueue NAME`` came to: the exit code and what to say, in order — lines on
    stderr (cron mails them), then the outcome on stdout or, for ``--json``, the object to
    print (``data``)."""

    exit_code: int
    stderr: tuple[str, ...] = ()
    stdout: str | None = None
    data: dict[str, Any] | None = None
    #: With ``MIGRATE_CRON_DEBUG``: the outage to raise once the lines are said (its traceback
    #: too; the slot is spooled all the same).
    debug_error: BaseException | None = field(default=None, compare=False)


def enqueue_slot(
    name: str,
    *,
    slot: str,
    quiet: bool,
    as_json: bool,
    database_url: str,
    table_prefix: str,
    registry: str,
    spool_dir: Path | None,
    direct: bool = False,
) -> Enqueued:
    """Enqueue job ``name``'s run for ``slot`` (``auto`` or ISO) once; say nothing, return
    what to say.

    The exit code is 0 (enqueued, or already there), 75 when the run could not be enqueued
    now but a retry can (the slot went to the spool, or — one line says — could not even go
    there). Our errors (unknown job, bad slot, missing tables) are raised as
    ``MigrateCronError`` for the caller's one-line error.

    Only the job's own entry is read (``registry.load_job``: the cost does not grow with the
    registry). If that entry cannot be used — the file has a syntax error, cannot be read, or
    the entry itself is bad — the run is not lost: it is spooled unresolved (the job's name,
    the time cron fired it, ``slot``) and replayed once the entry loads again.

    ``direct`` (the lean path from cron) writes through ``store.direct`` — the driver alone,
    no SQLAlchemy — whenever that writer understands the URL; same rows, messages and exit
    codes. The Typer command keeps the Store, so ``tests/cli/test_enqueue_lean.py`` holds the
    two to the same output.
    """
    from datetime import UTC, datetime

    from migrate_cron.config import Settings, validate_prefix
    from migrate_cron.errors import ConfigError, DatabaseUnavailable, UsageError
    from migrate_cron.producer.slot import resolve_slot
    from migrate_cron.producer.spool import Spool, target_of
    from migrate_cron.registry import load_job
    from migrate_cron.store import open_slot_writer, open_store

    now = datetime.now(UTC)
    config = Settings(database_url=database_url, table_prefix=validate_prefix(table_prefix))
    spool = Spool.on_host(spool_dir)
    target = target_of(config.safe_url, config.table_prefix)
    try:
        spec = load_job(registry, name)
    except (ConfigError, UsageError) as exc:  # UnknownJob (a typo) is neither: exit 2
        return _spool_unresolved(spool, name, slot, now, registry, target, str(exc))
    when = resolve_slot(spec, slot, now)
    stamp = f"{when.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"

    def to_spool(reason: str) -> str:
        return _spooled_line(
            f"the database is unavailable ({reason})",
            f"slot {stamp} of {spec.name}",
            lambda: spool.put(spec.name, when, spec.max_attempts, target, reason),
            f"run `migrate-cron enqueue {spec.name} --slot {stamp}` once it is back",
        )

    def at_deadline() -> None:
        sys.stderr.write(to_spool(f"no answer in {DEADLINE_SECONDS:g}s"))
        sys.stderr.flush()

    watchdog = _Watchdog(DEADLINE_SECONDS, at_deadline)
    store: SlotWriter = (
        open_slot_writer(config.database_url, config.table_prefix)
        if direct
        else open_store(config.database_url, prefix=config.table_prefix)
    )
    try:
        replayed = sum(1 for _ in spool.flush(target, replayer(store)))
        result = store.enqueue_run(
            spec.name,
            when,
            max_attempts=spec.max_attempts,
            skip_if_running=spec.overlap == Overlap.SKIP,
            hold_if_running=spec.overlap == Overlap.WAIT,
        )
    except DatabaseUnavailable as exc:
        said = (to_spool(str(exc)),) if watchdog.cancel() else ()
        debug = exc if os.environ.get("MIGRATE_CRON_DEBUG") else None
        return Enqueued(EX_TEMPFAIL, said, debug_error=debug)
    finally:
        watchdog.cancel()
        store.dispose()
    notes = (f"replayed {replayed} spooled slot(s) first\n",) if replayed else ()
    told: str
    if result.created and result.outcome == SlotOutcome.SKIPPED:
        told = SlotOutcome.SKIPPED  # overlap = "skip" and a run of the job is still running
    elif result.created:
        told = SlotOutcome.ENQUEUED
    elif result.outcome == SlotOutcome.SKIPPED:
        told = "already recorded as skipped"
    else:
        told = "already enqueued"
    if as_json:
        data = {
            "job": spec.name,
            "slot": when.astimezone(UTC),
            "slot_local": _local(when, spec.timezone),
            "outcome": told,
            "created": result.created,
            "job_id": result.job_id,
            "replayed": replayed,
        }
        return Enqueued(0, data=data)
    if quiet:
        return Enqueued(0)
    skipped = told == SlotOutcome.SKIPPED
    why = " (overlap = skip: the previous run is still running)" if skipped else ""
    return Enqueued(0, notes, stdout=told + why + "\n")


def _spool_unresolved(
    spool: Spool,
    name: str,
    slot: str,
    now: datetime,
    registry: str,
    target: str,
    problem: str,
) -> Enqueued:
    """The job's entry cannot be read: keep what is known — its name, when cron fired it,
    the ``--slot`` given — so the run is enqueued once the entry loads again (``replayer``).
    Exit 75 with one line: cron mails it every time the line fires until it is fixed."""
    from datetime import UTC

    from migrate_cron.errors import UsageError

    if slot != "auto":
        try:
            datetime.fromisoformat(slot.strip())
        except ValueError:
            raise UsageError(
                f"--slot {slot!r}: use `auto` or an ISO time like 2026-03-29T02:30"
            ) from None
    fired = now.replace(microsecond=0)
    stamp = f"{fired.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    line = _spooled_line(
        f"job {name!r} cannot be read ({problem})",
        f"its run fired at {stamp}" + (f" (--slot {slot})" if slot != "auto" else ""),
        lambda: spool.put(
            name,
            fired,
            None,
            target,
            problem,
            registry=os.path.abspath(registry),
            slot_arg=slot,
        ),
        f"fix the registry, then run `migrate-cron enqueue {name} --slot "
        f"{slot if slot != 'auto' else stamp}`",
        later="enqueued by the first enqueue once the entry loads again",
    )
    return Enqueued(EX_TEMPFAIL, (line,))


def _spooled_line(
    why: str,
    what: str,
    put: Callable[[], Placed],
    recover: str,
    later: str = "",
) -> str:
    """Spools the slot (``put``) and returns the line for stderr (cron mails it): where the
    slot went — or, when no spool place took it, every place tried and why, and the command
    that enqueues it by hand."""
    from migrate_cron.producer.spool import SpoolError

    try:
        placed = put()
    except SpoolError as exc:
        line = f"{why}; {what} could not be spooled anywhere ({exc}): {recover}"
    else:
        others = f" (not in {'; '.join(placed.failures)})" if placed.failures else ""
        line = f"{why}; {what} spooled to {placed.path}{others}" + (f", {later}" if later else "")
    return f"migrate-cron enqueue: {line}\n"


def replayer(store: SlotWriter) -> Callable[[SpooledSlot], bool]:
    """What writes one spooled slot, for ``Spool.flush``: False leaves it spooled — an
    unresolved slot whose entry still does not load (or no longer names a slot of the job's
    schedule). Each entry is read once per replay: a line that fired every minute while its
    entry was bad has many slots waiting, one read serves them all."""
    from migrate_cron.errors import ConfigError, UnknownJob, UsageError
    from migrate_cron.producer.slot import resolve_slot
    from migrate_cron.registry import JobSpec, load_job

    specs: dict[tuple[str, str], JobSpec | None] = {}

    def spec_of(registry: str, name: str) -> JobSpec | None:
        if (registry, name) not in specs:
            try:
                specs[registry, name] = load_job(registry, name)
            except (ConfigError, UsageError, UnknownJob):
                specs[registry, name] = None
        return specs[registry, name]

    def write(entry: SpooledSlot) -> bool:
        if entry.registry is None:
            assert entry.max_attempts is not None
            store.enqueue_run(entry.job, entry.slot, max_attempts=entry.max_attempts)
            return True
        spec = spec_of(entry.registry, entry.job)
        if spec is None:
            return False
        try:
            when = resolve_slot(spec, entry.slot_arg or "auto", entry.slot)
        except (ConfigError, UsageError):
            return False
        store.enqueue_run(spec.name, when, max_attempts=spec.max_attempts)
        return True

    return write


class _Watchdog:
    """After ``seconds``, runs ``on_expiry`` once and ends the process with 75 — unless
    cancelled first. ``cancel`` returns True if it won the race (expiry did not start)."""

    def __init__(self, seconds: float, on_expiry: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._done = False
        self._on_expiry = on_expiry
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        try:
            self._on_expiry()
        finally:
            os._exit(EX_TEMPFAIL)

    def cancel(self) -> bool:
        with self._lock:
            won = not self._done
            self._done = True
        self._timer.cancel()
        return won


def _local(t: datetime, tz: str) -> str:
    from zoneinfo import ZoneInfo

    return t.astimezone(ZoneInfo(tz)).isoformat()
