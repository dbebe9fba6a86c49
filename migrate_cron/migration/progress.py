"""``migrations``: where every registry job stands in the move off cron, and what comes next.

A row per job: its mode (who fires it now), its line, what the queue has seen of it (counts and
last success since it was switched), and the next step — from the migration plan for jobs still
on cron (migrate it now, or keep it there and why), from the queue's numbers for switched ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.errors import MigrateCronError
from migrate_cron.registry import JobSpec, Registry
from migrate_cron.registry.paths import source_path
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.store.models import KindHistory


@dataclass(frozen=True)
class Step:
    """A job's place in the plan: ``order`` in it, ``step`` 1-4 (4 = keep on cron) and why."""

    order: int
    step: int
    title: str
    reason: str


@dataclass(frozen=True)
class ProgressRow:
    name: str
    mode: Mode
    where: str
    switched_at: datetime | None
    done: int | None
    failed: int | None
    waiting: int | None
    last_success: datetime | None
    last_error: str | None
    plan_step: int | None
    next_step: str

    @property
    def last_run_text(self) -> str:
        if self.mode == Mode.CRON:
            return "(cron)"
        if self.last_success is None:
            return "never" if self.done is not None else "?"
        return self.last_success.isoformat(timespec="seconds")

    @property
    def runs_text(self) -> str:
        if self.mode == Mode.CRON or self.done is None:
            return "-"
        return f"{self.done} done, {self.failed} failed, {self.waiting} waiting"

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.name,
            "mode": self.mode,
            "line": self.where,
            "switched_at": self.switched_at,
            "done": self.done,
            "failed": self.failed,
            "waiting": self.waiting,
            "last_success": self.last_success,
            "last_error": self.last_error,
            "plan_step": self.plan_step,
            "next_step": self.next_step,
        }


def progress(
    registry: Registry,
    histories: Callable[[Iterable[str]], Mapping[str, KindHistory]],
    steps: Mapping[str, Step] | None = None,
) -> tuple[list[ProgressRow], str | None]:
    """Rows for every job (switched ones first, then plan order) and the database error, if
    the queue could not be read (the rows then show modes and plan steps only)."""
    base = Path(registry.path).resolve().parent
    if steps is None:
        steps = plan_steps(registry, base)
    switched = [j.name for j in registry if j.mode != Mode.CRON]
    error: str | None = None
    history: Mapping[str, KindHistory] = {}
    if switched:
        try:
            history = histories(switched)
        except MigrateCronError as exc:
            error = str(exc)
    order = {name: s.order for name, s in steps.items()}
    rows = [_row(job, base, steps.get(job.name), history.get(job.name)) for job in registry]
    rows.sort(key=lambda r: (r.mode == Mode.CRON, order.get(r.name, 10**6), r.name))
    return rows, error


def plan_steps(registry: Registry, base: Path) -> dict[str, Step]:
    """The plan step of each job still on cron, from its crontab file (files that cannot be
    read are left out: the row then says to run ``plan``)."""
    from migrate_cron.migration.planning import plan_files

    files: dict[Path, list[JobSpec]] = {}
    for job in registry:
        if job.source is not None:
            files.setdefault(source_path(job.source.file, base).resolve(), []).append(job)
    readable = [p for p in files if p.exists()]
    if not readable:
        return {}
    try:
        items = plan_files(readable)
    except MigrateCronError:
        return {}
    by_line = {(str(Path(i.file).resolve()), i.line): i for i in items}
    out: dict[str, Step] = {}
    for path, jobs in files.items():
        for job in jobs:
            assert job.source is not None
            item = by_line.get((str(path), job.source.line))
            if item is not None and item.text == job.source.text:
                out[job.name] = Step(item.order, item.step, item.title, item.reason)
    return out


def _row(job: JobSpec, base: Path, step: Step | None, h: KindHistory | None) -> ProgressRow:
    where = "-"
    if job.source is not None:
        where = f"{job.source.file}:{job.source.line}"
    return ProgressRow(
        name=job.name,
        mode=Mode(job.mode),
        where=where,
        switched_at=job.migration.switched_at if job.migration else None,
        done=h.done if h else None,
        failed=h.failed if h else None,
        waiting=(h.open + h.running) if h else None,
        last_success=h.last_success if h else None,
        last_error=h.last_error if h else None,
        plan_step=step.step if step else None,
        next_step=_next(job, step, h),
    )


def _next(job: JobSpec, step: Step | None, h: KindHistory | None) -> str:
    name = job.name
    if job.mode == Mode.CRON:
        if job.source is None:
            return "not from a crontab: nothing to migrate"
        if step is None:
            return f"see `migrate-cron plan {job.source.file}`"
        if step.step >= 4:
            return f"keep on cron: {step.reason}"
        return f"step {step.step} ({step.title}): `migrate-cron migrate {name}` — {step.reason}"
    if h is None:
        return f"`migrate-cron verify {name}` (queue not readable here)"
    if h.failed:
        return (
            f"{h.failed} failed run(s): `migrate-cron jobs list --kind {name} --state failed`, "
            f"then `migrate-cron jobs retry --kind {name}` or `migrate-cron rollback {name}`"
        )
    if not h.done:
        return f"wait for its next slot, then `migrate-cron verify {name}`"
    if job.mode == Mode.ENQUEUE:
        return (
            f"running from the queue; `migrate-cron verify {name}` — later, optionally "
            f"`migrate-cron migrate {name} --to scheduler`"
        )
    return f"done: the scheduler owns it (`migrate-cron verify {name}` any time)"
