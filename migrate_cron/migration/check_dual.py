"""The check that nothing else still runs the job's command (``dual``): no other crontab
line runs it directly, and no other registry job runs it from the queue."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_cron.migration.check import FAIL, OK, SKIPPED, Check, Origin
from migrate_cron.registry import JobSpec, Registry
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.crontab.entry import CrontabFile, CrontabLine


def dual_check(
    registry: Registry,
    spec: JobSpec,
    files: Iterable[Path],
    origins: Sequence[Origin],
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


def _own_number(spec: JobSpec, origin: Origin, jobs: Sequence[CrontabLine]) -> int | None:
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


def _is_switched(origins: Sequence[Origin], line: CrontabLine) -> bool:
    return any(o.migration is not None and line.text == o.migration.line for o in origins)
