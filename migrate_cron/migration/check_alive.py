"""The check that the processes a switched job needs are running (``alive``): a scheduler
holding the leader lease in scheduler mode, and a worker that can run the job — it claims the
job's kind, runs as root or as the job's user — and has heartbeated recently (its
``job_workers`` row). A database without worker rows (before schema step 5) shows only that
some worker renews the reaper lease; there a worker shows it can run the job by having run
one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from migrate_cron.errors import MigrateCronError
from migrate_cron.migration.check import FAIL, OK, SKIPPED, WAITING, Check
from migrate_cron.registry import JobSpec
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.store import Store
    from migrate_cron.store.workers import WorkerRecord

#: Seconds a ready job of the kind may wait before verify says no worker takes it.
STALLED_AFTER = 300.0


#: Seconds past the end of the reaper lease a worker may still be alive: its holder renews it
#: once per ``--heartbeat`` (10 s by default), so it is often just past its end.
WORKER_SILENT_AFTER = 60.0


@dataclass(frozen=True)
class Liveness:
    """What the queue shows of the processes a switched job needs: the scheduler leader's
    lease and the workers' reaper lease (holder, seconds until it expires; negative once
    expired), the kind's ready jobs, and the workers' rows (None: the database keeps none,
    then a worker shows it can run this job by having run one: ``ran``, jobs of the kind
    claimed since the switch)."""

    leader: tuple[str, float] | None
    ready: int
    oldest_ready_age: float | None
    worker: tuple[str, float] | None = None
    workers: tuple[WorkerRecord, ...] | None = None


def read_liveness(store: Store, name: str) -> Liveness:
    """What the queue shows now of the processes job ``name`` needs (its leases timed by the
    database's clock, the one that renews them)."""
    from migrate_cron.store.leases import REAPER_LEASE, SCHEDULER_LEASE

    now = store.db_now()
    held = store.lease_holder(SCHEDULER_LEASE)
    reaper = store.lease_holder(REAPER_LEASE)
    kinds = {k.kind: k for k in store.status(now, now, slots=False).kinds}  # kinds only
    kind = kinds.get(name)
    oldest = kind.oldest_ready_at if kind is not None else None
    return Liveness(
        leader=(held[0], (held[1] - now).total_seconds()) if held else None,
        ready=kind.ready if kind is not None else 0,
        oldest_ready_age=(now - oldest).total_seconds() if oldest is not None else None,
        worker=(reaper[0], (reaper[1] - now).total_seconds()) if reaper else None,
        workers=tuple(store.workers()) if store.console_enabled() else None,
    )


def alive_check(spec: JobSpec, live: Callable[[], Liveness], ran: int | None) -> Check:
    title = "a scheduler and a worker serve it"
    if spec.mode == Mode.CRON or spec.migration is None:
        return Check("alive", title, SKIPPED, "not switched yet: cron still runs it")
    try:
        seen = live()
    except MigrateCronError as exc:
        return Check("alive", title, FAIL, f"cannot read the queue: {exc}")
    problems: list[str] = []
    fine: list[str] = []
    unknown: list[str] = []
    if spec.mode == Mode.SCHEDULER:
        if seen.leader is None:
            problems.append(
                "no scheduler holds the leader lease: nothing enqueues this job's slots; "
                "start `migrate-cron scheduler` (docs/operating.md, Running it)"
            )
        elif seen.leader[1] <= 0:
            problems.append(
                f"the scheduler {seen.leader[0]} stopped renewing its lease "
                f"{-seen.leader[1]:.0f}s ago: is it frozen or dead? A standby takes over "
                "within its --lease-ttl; if none runs, start one"
            )
        else:
            fine.append(f"scheduler {seen.leader[0]} leads")
    age = seen.oldest_ready_age
    running = seen.worker is not None and seen.worker[1] > -WORKER_SILENT_AFTER
    if age is not None and age > STALLED_AFTER:
        problems.append(
            f"{seen.ready} ready job(s) of {spec.name} have waited {age:.0f}s: no worker takes "
            f"them. Is `migrate-cron worker` running, with {spec.name} in its registry (and "
            "as root or the job's user)?"
        )
    elif seen.workers is not None:
        serving, why_not = _serving(spec, seen.workers)
        if serving:
            fine.append(
                serving + (f"; workers ran {ran} job(s) of it since the switch" if ran else "")
            )
        else:
            problems.append(why_not)
    elif not running:
        silent = (
            f" (the last one, {seen.worker[0]}, was seen {-seen.worker[1]:.0f}s ago)"
            if seen.worker
            else ""
        )
        problems.append(
            f"no worker is running{silent}: nothing will run {spec.name}'s jobs; start "
            "`migrate-cron worker` with this registry"
        )
    elif ran:
        fine.append(f"workers ran {ran} job(s) of it since the switch; {seen.ready} ready now")
    else:
        assert seen.worker is not None
        unknown.append(
            f"a worker runs ({seen.worker[0]}), but none has run a job of {spec.name} since the "
            "switch: whether one can (its kind, its user) shows at its first slot — verify "
            "again after it"
        )
    able = _able(spec, seen.workers or ())
    data = {
        "leader": seen.leader[0] if seen.leader else None,
        "worker": (able[0].name if able else None)
        if seen.workers is not None
        else (seen.worker[0] if running and seen.worker else None),
        "ran": ran,
        "ready": seen.ready,
        "oldest_ready_age": age,
    }
    if problems:
        return Check("alive", title, FAIL, problems[0], tuple(problems[1:]), data)
    if unknown:
        return Check("alive", title, WAITING, unknown[0], tuple(fine), data)
    return Check("alive", title, OK, "; ".join(fine), (), data)


def _able(spec: JobSpec, workers: tuple[WorkerRecord, ...]) -> list[WorkerRecord]:
    """The live workers that can run the job (or may: a kinds list cut short)."""
    return [w for w in workers if w.heartbeating and w.can_run(spec.name, spec.user) is not False]


def _serving(spec: JobSpec, workers: tuple[WorkerRecord, ...]) -> tuple[str, str]:
    """What serves the job from the worker rows: a line for ok, else why nothing does."""
    live = [w for w in workers if w.heartbeating]
    able = _able(spec, workers)
    if able:
        w = able[0]
        more = f" (and {len(able) - 1} more)" if len(able) > 1 else ""
        return (
            f"worker {w.name} on {w.host} can run it (claims {spec.name}, runs as "
            f"{w.run_as}), heartbeat {w.seen_ago:.0f}s ago{more}",
            "",
        )
    start = "start `migrate-cron worker` with this registry" + (
        f", as root or as {spec.user}" if spec.user else ""
    )
    if not live:
        last = max(workers, key=lambda w: w.last_seen, default=None)
        gone = (
            ""
            if last is None
            else f" (the last one, {last.name}, "
            + ("stopped" if last.stopped_at is not None else "went silent")
            + f" {last.seen_ago:.0f}s ago)"
        )
        return "", f"no worker is running{gone}: nothing will run {spec.name}'s jobs; {start}"
    reasons = [_cannot(w, spec) for w in live[:3]]
    rest = f"; {len(live) - 3} more" if len(live) > 3 else ""
    return "", (
        f"{len(live)} worker(s) run, but none can run {spec.name}: {'; '.join(reasons)}{rest}; "
        f"{start}"
    )


def _cannot(w: WorkerRecord, spec: JobSpec) -> str:
    if spec.user is not None and not w.any_user and w.run_as != spec.user:
        return f"{w.name} runs as {w.run_as}, the job as {spec.user}"
    return f"{w.name} claims only {', '.join((w.kinds or ())[:5])}" + (
        ", …" if len(w.kinds or ()) > 5 else ""
    )
