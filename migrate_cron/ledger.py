"""Side effects that must not happen twice: the ``side_effects`` ledger, for scripts and code.

A job can always run twice (a worker dies after the invoice went out and before ``done`` was
written; the retry starts from the top), so an effect outside the database needs its own
record, written *before* the effect: the ``attempted`` row. After the effect it becomes
``done`` (a later call skips it) or ``failed`` (a later call runs it again). A row still
``attempted`` is the honest answer to a crash — "it may have happened" — and nothing runs the
effect again until a person checks and forgets the key. Two callers racing for one key: the
insert lets exactly one win; the other is told the key is held (exit 3 for ``once``), it does
not wait, because a holder that crashed would make it wait forever.

An effect *inside* the database (a row written in the same transaction) needs no doubt at all:
``EffectLedger.once(key, conn=conn)`` records ``done`` in the caller's transaction, so the mark and
the effect commit together or not at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

from migrate_cron.errors import EffectInDoubt, UsageError
from migrate_cron.store.models import Effect
from migrate_cron.vocabulary import EffectStatus

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from migrate_cron.store import Store

KEY_MAX = 255
#: Signals ``run_once`` passes on to the command instead of dying with the key ``attempted``.
#: SIGINT is only ignored: Ctrl-C reaches the command from the terminal already.
FORWARDED = (signal.SIGTERM, signal.SIGHUP)
#: Exit code of a command that could not be started (as the shell reports it).
NOT_STARTED = 127


def holder() -> str:
    """``host:pid`` of this process: who took a key, shown when another caller is refused."""
    return f"{socket.gethostname()}:{os.getpid()}"


def check_key(key: str) -> str:
    if not key or len(key) > KEY_MAX:
        raise UsageError(f"a side-effect key needs 1 to {KEY_MAX} characters, got {len(key)}")
    return key


def job_id_from_env() -> int | None:
    """The queue job this runs under (``MIGRATE_CRON_JOB_ID``, set by the worker), if any."""
    value = os.environ.get("MIGRATE_CRON_JOB_ID", "")
    return int(value) if value.isdigit() else None


def in_doubt(effect: Effect) -> EffectInDoubt:
    """The refusal for an ``attempted`` key, saying whether its holder still runs (when it is
    a process on this host) — the difference between "wait" and "check what happened"."""
    return EffectInDoubt(effect.key, effect.holder, effect.attempted_at, _alive(effect.holder))


def _alive(who: str | None) -> bool | None:
    """Whether ``host:pid`` is a live process; None when it is not on this host."""
    host, _, pid = (who or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EffectLedger:
    """The side-effect ledger of one store, for application code and handlers."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @contextlib.contextmanager
    def once(
        self,
        key: str,
        *,
        conn: Connection | None = None,
        ttl: float | None = None,
        retry_attempted: bool = False,
    ) -> Iterator[bool]:
        """``with ledger.once("invoice:8812:send") as first: if first: send(...)``.

        Yields True when the body must perform the effect, False when it is done already.
        With ``conn``, ``done`` is written in that transaction (for effects in the same
        database: both commit or neither). Without it, ``attempted`` is committed first, then
        ``done`` after the body, or ``failed`` if it raises; a key left ``attempted`` raises
        ``EffectInDoubt``.
        """
        check_key(key)
        if conn is not None:
            yield self.store.effect_record(conn, key, holder=holder(), ttl=ttl)
            return
        me = holder()
        claim = self.store.effect_begin(
            key, holder=me, job_id=job_id_from_env(), retry_attempted=retry_attempted
        )
        if not claim.won:
            if claim.effect.status == EffectStatus.ATTEMPTED:
                raise in_doubt(claim.effect)
            yield False
            return
        try:
            yield True
        except BaseException:
            self.store.effect_finish(key, holder=me, attempts=claim.effect.attempts, ok=False)
            raise
        self.store.effect_finish(key, holder=me, attempts=claim.effect.attempts, ok=True, ttl=ttl)


@dataclass(frozen=True)
class OnceResult:
    """What ``run_once`` did: ``ran`` the command (with ``exit_code``), or found it ``done``.
    ``recorded`` is False when the outcome could not be written (the key stays attempted);
    ``error`` says why the command could not start."""

    key: str
    ran: bool
    exit_code: int
    effect: Effect
    recorded: bool = True
    error: str | None = None


def run_once(
    store: Store,
    key: str,
    argv: Sequence[str],
    *,
    ttl: float | None = None,
    retry_attempted: bool = False,
) -> OnceResult:
    """Run ``argv`` unless ``key`` is done: ``attempted`` first, then the command with this
    process's stdin/stdout/stderr, then ``done`` (exit 0) or ``failed``.

    SIGTERM/SIGINT/SIGHUP are passed on to the command and its exit recorded, so a polite stop
    does not leave the key in doubt; only a crash (SIGKILL, power) does.
    """
    check_key(key)
    me = holder()
    claim = store.effect_begin(
        key, holder=me, job_id=job_id_from_env(), retry_attempted=retry_attempted
    )
    if not claim.won:
        if claim.effect.status == EffectStatus.ATTEMPTED:
            raise in_doubt(claim.effect)
        return OnceResult(key, False, 0, claim.effect)
    code, error = _run(argv)
    from migrate_cron.errors import DatabaseUnavailable

    try:
        recorded = store.effect_finish(
            key, holder=me, attempts=claim.effect.attempts, ok=code == 0, exit_code=code, ttl=ttl
        )
    except DatabaseUnavailable:
        recorded = False
    return OnceResult(key, True, code, claim.effect, recorded, error)


def _run(argv: Sequence[str]) -> tuple[int, str | None]:
    """The command's exit code; 128+N when a signal ended it, 127 when it could not start.

    The handlers are in place *before* the command starts: a stop that arrives while it is
    being spawned (the command may already be running before ``Popen`` returns) is passed on
    as soon as there is a child to pass it to, never lost with the key left ``attempted``.
    """
    child: subprocess.Popen[bytes] | None = None
    pending: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child is None:
            pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            child = subprocess.Popen(list(argv))
        except OSError as exc:
            return NOT_STARTED, f"cannot run {argv[0]!r}: {exc.strerror or exc}"
        for signum in pending:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return (128 - code if code < 0 else code), None
