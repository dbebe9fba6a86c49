"""``verify NAME``: is the switch of one crontab line safe, before and after it is made?

Three checks, each ``ok``, ``fail``, ``waiting`` (nothing could have happened yet) or
``skipped`` (does not apply in this mode):

1. **slots** — the minutes cron fires the original line (its schedule in its zone: CRON_TZ or
   the host's) and the slots migrate-cron produces (the registry's schedule and timezone) over
   the next N days are the same; every difference is listed. In enqueue mode this also checks
   that the switched line is still in the crontab, with the original schedule.
2. **dual execution** — no other crontab line still runs the job's command directly, and no
   other registry job runs the same command from the queue.
   **failures** — the registry's command lets a failure reach the queue: a tail that forces
   success (``|| true``, ``; exit 0``) makes every failed run ``done``, never retried nor
   shelved (read from the shell tree, as ``analyze``'s ``errors-swallowed``).
3. **queue** — since the switch, the job ran successfully in the queue: counts, last success,
   last error. A failed run on the shelf fails the check; so does a slot that came and went
   with no success.
4. **alive** — what the switched job needs now: in scheduler mode, a scheduler holding the
   leader lease; in both modes a worker running (the reaper lease renewed), no ready job of
   the kind waiting longer than a worker would leave it, and a worker having run one of its
   jobs since the switch — until then ``waiting``, as no table says which kinds (and users)
   a worker can run (an "ok" with no worker running would be a lie).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.errors import MigrateCronError
from migrate_cron.migration.crontab_file import CrontabText
from migrate_cron.registry import JobSpec, Migration, Registry, Source
from migrate_cron.registry.paths import source_path
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.crontab.entry import CrontabFile, CrontabLine
    from migrate_cron.store.models import KindHistory

OK, FAIL, WAITING, SKIPPED = "ok", "fail", "waiting", "skipped"
MAX_LISTED = 10


@dataclass(frozen=True)
class Check:
    key: str
    title: str
    status: str
    summary: str
    details: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VerifyReport:
    name: str
    mode: Mode
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.status != FAIL for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.name,
            "mode": self.mode,
            "ok": self.ok,
            "checks": [asdict(c) for c in self.checks],
        }


def verify_job(
    registry: Registry,
    spec: JobSpec,
    *,
    files: Sequence[Path] | None,
    days: int,
    now: datetime,
    history: Callable[[datetime], KindHistory],
    read: Callable[[Path, bytes | None], CrontabFile] | None = None,
    host_zone: str | None = None,
    live: Callable[[], Liveness] | None = None,
) -> VerifyReport:
    """Run the checks; ``history(since)`` and ``live()`` read the queue (may raise)."""
    from migrate_cron.crontab.sources import load_crontab as read_crontab
    from migrate_cron.crontab.timezone import host_timezone

    read = read or read_crontab
    zone = host_zone or host_timezone()
    base = Path(registry.path).resolve().parent
    origins = _origins(spec, base)
    several = len(origins) > 1
    checks = [
        _slots(spec, origin, read, zone, now, days, several)
        for origin in (origins or [_Origin(None, None, None)])
    ]
    own = [o.path for o in origins if o.path is not None]
    checks.append(_dual(registry, spec, list(files) if files else own, origins, read))
    checks.append(_failures(spec))
    queue = _queue(spec, now, history)
    checks.append(queue)
    if registry.errors:
        checks.append(_registry_errors(registry))
    if live is not None:
        checks.append(_alive(spec, live, queue.data.get("claimed")))
    return VerifyReport(spec.name, Mode(spec.mode), tuple(checks))


def _registry_errors(registry: Registry) -> Check:
    """Entries that did not load: the worker and the scheduler leave them (their runs wait,
    or are spooled by ``enqueue``), so a check of the registry fails on them."""
    errors = list(registry.errors.values())
    return Check(
        "registry",
        "every registry entry loads",
        FAIL,
        f"{len(errors)} entr{'y does' if len(errors) == 1 else 'ies do'} not load: workers and "
        "schedulers leave them, enqueue spools their runs",
        tuple(str(e) for e in errors),
    )


@dataclass(frozen=True)
class _Origin:
    """One line of the job: where it came from, its switch (None: cron still runs it) and
    the file that holds it now."""

    source: Source | None
    migration: Migration | None
    path: Path | None


def _origins(spec: JobSpec, base: Path) -> list[_Origin]:
    out = []
    for src in spec.sources:
        mig = spec.migration_of(src)
        path = source_path(mig.crontab if mig else src.file, base)
        out.append(_Origin(src, mig, path))
    return out


# ------------------------------------------------------------------------ slots
def _slots(
    spec: JobSpec,
    origin: _Origin,
    read: Callable[[Path, bytes | None], CrontabFile],
    zone: str,
    now: datetime,
    days: int,
    several: bool = False,
) -> Check:
    title = f"same slots as cron (next {days} days)"
    if origin.source is not None and several:
        title += f" — {origin.source.label}"
    if origin.source is None or not spec.schedule:
        return Check("slots", title, SKIPPED, "the job has no crontab line or no schedule")
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    details: list[str] = []
    line = _original_line(spec, origin, read, details)
    if line is None:
        return Check(
            "slots", title, FAIL, details[0] if details else "line not found", tuple(details[1:])
        )
    cron_zone = line.timezone or zone
    try:
        cron = Schedule.parse(line.schedule or "", cron_zone)
        ours = Schedule.parse(spec.schedule, spec.timezone)
    except ScheduleError as exc:
        return Check("slots", title, FAIL, f"cannot compare: {exc}")
    end = now + timedelta(days=days)
    fired = list(cron.iter_between(now, end))
    mode = spec.mode if origin.migration is not None else "cron"
    produced = _produced(mode, fired, ours, now, end)
    missing = sorted(set(fired) - set(produced))
    extra = sorted(set(produced) - set(fired))
    data = {
        "origin": origin.source.label,
        "switched": origin.migration is not None,
        "cron": {"schedule": line.schedule, "timezone": cron_zone, "slots": len(fired)},
        "migrate_cron": {
            "schedule": spec.schedule,
            "timezone": spec.timezone,
            "slots": len(set(produced)),
        },
        "missing": missing[:MAX_LISTED],
        "extra": extra[:MAX_LISTED],
    }
    if not missing and not extra:
        summary = (
            f"identical: {len(fired)} slots ({line.schedule!r} in {cron_zone} = "
            f"{spec.schedule!r} in {spec.timezone})"
        )
        return Check("slots", title, OK, summary, tuple(details), data)
    for t in missing[:MAX_LISTED]:
        details.append(f"cron fires at {_fmt(t, cron_zone)}, migrate-cron has no such slot")
    for t in extra[:MAX_LISTED]:
        details.append(f"migrate-cron has a slot at {_fmt(t, spec.timezone)}, cron does not fire")
    details.append(
        "fix the registry's schedule/timezone to match the crontab (or the crontab's CRON_TZ), "
        "then verify again"
    )
    summary = (
        f"{len(missing)} cron slot(s) missing and {len(extra)} extra: cron {line.schedule!r} "
        f"in {cron_zone}, registry {spec.schedule!r} in {spec.timezone}"
    )
    return Check("slots", title, FAIL, summary, tuple(details), data)


def _produced(
    mode: str, fired: list[datetime], ours: Any, now: datetime, end: datetime
) -> list[datetime]:
    """The slots migrate-cron records: in enqueue mode cron's fire times mapped by
    ``--slot auto`` (the registry's latest slot at or before the fire time); otherwise the
    registry's own slots (what the scheduler will enqueue)."""
    if mode == Mode.ENQUEUE:
        out = []
        for t in fired:
            slot = ours.latest_at_or_before(t)
            if slot is not None:
                out.append(slot)
        return out
    return list(ours.iter_between(now, end))


def _original_line(
    spec: JobSpec,
    origin: _Origin,
    read: Callable[[Path, bytes | None], CrontabFile],
    details: list[str],
) -> CrontabLine | None:
    """The origin's original line parsed in its file's context (env lines, CRON_TZ above
    it): the current file with the switched line put back, as cron read it before."""
    src, path = origin.source, origin.path
    assert src is not None
    if path is None or not path.exists():
        details.append(f"the crontab {path or src.file} does not exist")
        return None
    text = CrontabText.read(path)
    switched = origin.migration is not None and spec.mode == Mode.ENQUEUE
    expected = origin.migration.line if origin.migration else src.text
    found = [n for n in text.find(expected)]
    number = src.line if src.line in found else (found[0] if len(found) == 1 else None)
    if number is None:
        if switched:
            details.append(f"the switched line of {spec.name} is not in {path}")
            details.append(f"expected: {expected}")
            details.append("cron no longer enqueues it: restore the line or roll back")
        else:
            details.append(f"line {src.line} of {path} is not the registry's line any more")
            details.append(f"registry: {src.text}")
            details.append(f"file:     {text.line(src.line)}")
        return None
    if switched and not text.lines[number - 1].startswith(_schedule_part(src)):
        details.append("the switched line's schedule differs from the original line")
    restored = text.replace(number, src.text)
    parsed = read(path, restored.render())
    line = next((ln for ln in parsed.lines if ln.number == number), None)
    if line is None or line.schedule is None:
        details.append(f"line {number} of {path} is not a cron job line")
        return None
    return line


def _schedule_part(src: Any) -> str:
    from migrate_cron.migration.rewrite import command_start

    return str(src.text[: command_start(src.text, src.user is not None)])


# ------------------------------------------------------------------------ dual execution
def _dual(
    registry: Registry,
    spec: JobSpec,
    files: Iterable[Path],
    origins: Sequence[_Origin],
    read: Callable[[Path, bytes | None], CrontabFile],
) -> Check:
    title = "no dual execution"
    if not spec.command:
        return Check("dual", title, SKIPPED, "a handler job has no command to compare")
    want = _norm(spec.command)
    problems: list[str] = []
    notes: list[str] = []
    seen: set[Path] = set()
    for path in files:
        resolved = path.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        if not path.exists():
            problems.append(f"{path}: no such file")
            continue
        jobs = read(path, None).jobs
        here = [o for o in origins if o.path is not None and o.path.resolve() == resolved]
        own = {n for o in here if (n := _own_number(spec, o, jobs)) is not None}
        for line in jobs:
            if line.number in own:
                continue
            if _norm(line.shell_command or "") == want:
                problems.append(f"{path}:{line.number} still runs the command: {line.text}")
                unswitched = [o for o in here if o.migration is None and o.source]
                if spec.mode != Mode.CRON and unswitched and unswitched[0].source:
                    host = unswitched[0].source.host
                    label = f"{host}:{path}" if host else str(path)
                    notes.append(
                        f"{label} is an origin of {spec.name} not switched yet: "
                        f"`migrate-cron migrate {spec.name} --crontab {label}`"
                    )
            elif _enqueues(line, spec.name) and not _is_switched(here, line):
                notes.append(
                    f"{path}:{line.number} also enqueues {spec.name} (deduplicated per slot, "
                    "but remove one)"
                )
    for other in registry:
        same = other.name != spec.name and other.command and _norm(other.command) == want
        if same and (other.mode != Mode.CRON or spec.mode != Mode.CRON):
            problems.append(f"registry job {other.name} (mode {other.mode}) runs the same command")
    if problems:
        problems.append("comment out or remove the other line (or job), then verify again")
        return Check(
            "dual",
            title,
            FAIL,
            f"{len(problems) - 1} other place(s) run the command",
            tuple(problems + notes),
        )
    where = ", ".join(str(p) for p in seen) or "no crontab given"
    return Check("dual", title, OK, f"no other line runs the command ({where})", tuple(notes))


def _own_number(spec: JobSpec, origin: _Origin, jobs: Sequence[CrontabLine]) -> int | None:
    """The job's own line while it is still on cron (its source line): not a second runner.
    Once the job is switched, a line still running the command is one."""
    src = origin.source
    if spec.mode != Mode.CRON or src is None:
        return None
    same = [ln.number for ln in jobs if ln.text == src.text]
    if src.line in same:
        return src.line
    return same[0] if same else None


def _norm(command: str) -> str:
    return " ".join(command.split())


def _enqueues(line: CrontabLine, name: str) -> bool:
    import shlex

    try:
        words = shlex.split(line.shell_command or "")
    except ValueError:
        return False
    return (
        len(words) >= 3
        and words[0].endswith("migrate-cron")
        and words[1] == "enqueue"  # vocabulary: the command, not the mode
        and words[2] == name
    )


def _is_switched(origins: Sequence[_Origin], line: CrontabLine) -> bool:
    return any(o.migration is not None and line.text == o.migration.line for o in origins)


# ------------------------------------------------------------------------ queue
def _failures(spec: JobSpec) -> Check:
    from migrate_cron.migration.swallow import find

    title = "a failed run reaches the queue"
    hidden = find(spec.command or "")
    if hidden.tail and (spec.mode == Mode.CRON or spec.migration is None):
        return Check(
            "failures",
            title,
            SKIPPED,
            f"not switched yet: the command ends in `{hidden.tail}`, which `migrate` removes "
            "from the registry's command (unless given --keep-swallow)",
            (),
            {"swallowed_by": hidden.tail},
        )
    if hidden.tail:
        return Check(
            "failures",
            title,
            FAIL,
            f"the command ends in `{hidden.tail}`: a failed run is recorded done, so the queue "
            "never retries it, never shelves it, and nobody hears of it",
            (
                f"remove the tail from `command` in [jobs.{spec.name}] (`migrate-cron migrate "
                f"{spec.name}` does it unless given --keep-swallow)",
            ),
            {"swallowed_by": hidden.tail},
        )
    details = (
        (
            f"its output goes to /dev/null ({', '.join(hidden.nulls)}): a failed attempt "
            "keeps no output to read",
        )
        if hidden.nulls
        else ()
    )
    return Check("failures", title, OK, "a non-zero exit fails the run", details)


def _queue(spec: JobSpec, now: datetime, history: Callable[[datetime], KindHistory]) -> Check:
    title = "runs in the queue since the switch"
    if spec.mode == Mode.CRON or spec.migration is None:
        return Check("queue", title, SKIPPED, "not switched yet: cron still runs it")
    since = min(m.switched_at for m in spec.migrations)
    try:
        h = history(since)
    except MigrateCronError as exc:
        return Check("queue", title, FAIL, f"cannot read the queue: {exc}")
    data = {
        "since": since,
        "done": h.done,
        "failed": h.failed,
        "open": h.open,
        "running": h.running,
        "cancelled": h.cancelled,
        "retried": h.retried,
        "claimed": h.claimed,
        "last_success": h.last_success,
        "last_error": h.last_error,
    }
    counts = f"{h.done} done, {h.failed} failed, {h.open} open, {h.running} running" + (
        f", {h.retried} needed retries" if h.retried else ""
    )
    details: list[str] = []
    if h.last_success:
        details.append(f"last success: {h.last_success.isoformat(timespec='seconds')}")
    if h.last_error:
        first = h.last_error.strip().splitlines()[-1] if h.last_error.strip() else ""
        details.append(f"last error (job {h.last_error_job}): {first[:300]}")
    if h.failed:
        details.append(
            f"failed runs wait on the shelf: `migrate-cron jobs list --kind {spec.name} "
            "--state failed`, fix the cause, then `migrate-cron jobs retry --kind "
            f"{spec.name}`"
        )
        return Check("queue", title, FAIL, counts, tuple(details), data)
    if h.done:
        return Check("queue", title, OK, counts, tuple(details), data)
    due = _first_slot_after(spec, since)
    if due is None or due > now:
        when = _fmt(due, spec.timezone) if due else "unknown"
        details.append(
            f"no slot since the switch yet; the first is at {when}: verify again after it"
        )
        return Check("queue", title, WAITING, counts, tuple(details), data)
    if h.total:
        details.append("enqueued but not done yet: is a worker running? (`migrate-cron worker`)")
    else:
        details.append(
            f"a slot was due at {_fmt(due, spec.timezone)} but nothing was enqueued: "
            "is the switched crontab installed, and does cron run it? (look at cron's log "
            "and mail)"
        )
    return Check("queue", title, FAIL, counts, tuple(details), data)


# ------------------------------------------------------------------------ liveness
#: Seconds a ready job of the kind may wait before verify says no worker takes it.
STALLED_AFTER = 300.0


#: Seconds past the end of the reaper lease a worker may still be alive: its holder renews it
#: once per ``--heartbeat`` (10 s by default), so it is often just past its end.
WORKER_SILENT_AFTER = 60.0


@dataclass(frozen=True)
class Liveness:
    """What the queue shows of the processes a switched job needs: the scheduler leader's
    lease and the workers' reaper lease (holder, seconds until it expires; negative once
    expired), and the kind's ready jobs. No table lists what each worker can run, so a worker
    shows it can run this job by having run one (``ran``: jobs of the kind claimed since the
    switch)."""

    leader: tuple[str, float] | None
    ready: int
    oldest_ready_age: float | None
    worker: tuple[str, float] | None = None


def _alive(spec: JobSpec, live: Callable[[], Liveness], ran: int | None) -> Check:
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
    data = {
        "leader": seen.leader[0] if seen.leader else None,
        "worker": seen.worker[0] if running and seen.worker else None,
        "ran": ran,
        "ready": seen.ready,
        "oldest_ready_age": age,
    }
    if problems:
        return Check("alive", title, FAIL, problems[0], tuple(problems[1:]), data)
    if unknown:
        return Check("alive", title, WAITING, unknown[0], tuple(fine), data)
    return Check("alive", title, OK, "; ".join(fine), (), data)


def _first_slot_after(spec: JobSpec, since: datetime) -> datetime | None:
    if not spec.schedule:
        return None
    from migrate_cron.crontab.schedule import Schedule, ScheduleError

    try:
        return Schedule.parse(spec.schedule, spec.timezone).next_after(since)
    except ScheduleError:
        return None


def _fmt(t: datetime, tz: str) -> str:
    from zoneinfo import ZoneInfo

    return t.astimezone(ZoneInfo(tz)).isoformat(timespec="minutes") + f" ({tz})"
