"""The status queries: what an operator needs to know, cheap on a table of millions of done rows.

Read-only statements in one transaction, each bounded by an index rather than by the size of
the table:

- **live**: counts per kind and state for everything *not* done (open, running, failed,
  cancelled) and the oldest *due time* of a ready job. Done rows are excluded by the
  ``state IN`` list, so the planner reads the claim / state indexes, never the done rows.
  The due time is when the work became due, not when its row was written (``due_at``): a
  cron slot replayed from the spool an hour late, or enqueued late by a scheduler catching
  up, has waited since its slot, and ``status --check --max-age`` and the metric must say so.
- **durations** (``run_times.py``): run time of jobs done inside the window (``finished_at >=
  since``), the runs' own from the attempts history (its covering ``(outcome, finished_at,
  kind, started_at)`` index), and the done counts from the job rows, counted inside the
  ``(kind, state, finished_at)`` index for the kinds ``last`` found. Percentiles are
  ``percentile_cont``'s, the same definition on every backend.
- **last**: the newest success and failure per kind, all time, by loose index scan on
  ``(kind, state, finished_at)``: one index probe per kind, whatever the number of done rows
  (a recursive CTE hopping from kind to kind on PostgreSQL and SQLite; MySQL/MariaDB's own
  "index for group-by").
- **slots**: the newest slot per scheduled job the same way on the slot key, then those rows
  by that key with the state and start time of the job each enqueued.

"Done" in the answer means done inside the window; failed and cancelled are all-time counts
(a permanently failed job needs a person until someone retries or cancels it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    and_,
    case,
    func,
    literal,
    or_,
    select,
)

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.base import aware_or_none
from migrate_cron.store.keys import CHAIN_REF_PREFIX
from migrate_cron.store.models import KindStatus, QueueStatus, SlotStatus
from migrate_cron.store.percentiles import (
    Durations,
)
from migrate_cron.store.run_times import RunTimes
from migrate_cron.store.schema import UTCDateTime
from migrate_cron.vocabulary import COUNTED_STATES, FINISHED_STATES, JobState, SlotOutcome


class StatusQueries:
    """Builds and runs the status statements for one store (tables, prefix, dialect)."""

    def __init__(self, store: AttemptOps) -> None:
        self.store = store
        self.job = store.tables.job
        self.runs = store.tables.scheduled_runs

    # ------------------------------------------------------------------ statements
    def due_at(self) -> ColumnElement[Any]:
        """When a ready job's work became due: a cron slot's job on its first try (no attempt
        counted, no error recorded: never claimed, or given back at shutdown) has been due
        since its slot (``scheduled_for``), however late its row was written; every other
        job since its ``run_at`` — a retry when its backoff ended (or the reaper reopened
        it), a failed job ``jobs retry`` put back when that was asked for, a follow-up job
        (``after:ID``, which carries its parent's slot) when the parent finished, a plain
        enqueue when it was made runnable. Computed per open row of the live statement, the
        rows it reads already (no index changes)."""
        job = self.job
        unstarted_slot = and_(
            job.c.attempts == 0,
            job.c.last_error.is_(None),
            job.c.scheduled_for.is_not(None),
            job.c.scheduled_for < job.c.run_at,
            job.c.ref.not_like(f"{CHAIN_REF_PREFIX}%"),
        )
        return case((unstarted_slot, job.c.scheduled_for), else_=job.c.run_at)

    def live_sql(self, now: datetime) -> Select[Any]:
        job = self.job
        at = literal(now, UTCDateTime())
        ready = job.c.run_at <= at
        return (
            select(
                job.c.kind,
                job.c.state,
                func.count().label("n"),
                func.sum(case((ready, 1), else_=0)).label("ready"),
                func.min(case((ready, self.due_at()), else_=None), type_=UTCDateTime()).label(
                    "oldest_ready"
                ),
            )
            .where(job.c.state.in_(COUNTED_STATES))
            .group_by(self._no_index(job.c.kind), job.c.state)
        )

    def last_sql(self) -> Select[Any]:
        """Rows (kind, state, last finished_at) for done and failed.

        MySQL/MariaDB answer ``GROUP BY kind, state`` + ``MAX(finished_at)`` with their own
        loose index scan ("Using index for group-by"); they cannot seek for a correlated
        ``kind > x``, so the recursive hop would read the whole index there. PostgreSQL has no
        loose index scan, so it hops through the kinds with a recursive CTE instead (as does
        SQLite, whose min() seeks).
        """
        job = self.job
        states = FINISHED_STATES
        if self.store.group_by_index_scan:
            return (
                select(job.c.kind, job.c.state, func.max(job.c.finished_at).label("last"))
                .where(job.c.state.in_(states))
                .group_by(job.c.kind, job.c.state)
            )
        kinds = self._distinct(job, job.c.kind, "kinds")
        probe = job.alias("probe")
        per_state = [
            select(
                kinds.c.value.label("kind"),
                literal(state).label("state"),
                select(func.max(probe.c.finished_at))
                .where(probe.c.kind == kinds.c.value, probe.c.state == state)
                .scalar_subquery()
                .label("last"),
            ).where(kinds.c.value.is_not(None))
            for state in states
        ]
        return per_state[0].union_all(per_state[1])  # type: ignore[return-value]

    def newest_slots_sql(self) -> Select[Any]:
        """Rows (job_name, newest scheduled_for): loose index scans on the slot key, as in
        ``last_sql``."""
        runs = self.runs
        if self.store.group_by_index_scan:
            return select(runs.c.job_name, func.max(runs.c.scheduled_for).label("slot")).group_by(
                runs.c.job_name
            )
        names = self._distinct(runs, runs.c.job_name, "names")
        probe = runs.alias("probe")
        newest = (
            select(func.max(probe.c.scheduled_for))
            .where(probe.c.job_name == names.c.value)
            .scalar_subquery()
        )
        return select(names.c.value.label("job_name"), newest.label("slot")).where(
            names.c.value.is_not(None)
        )

    def slots_sql(self, newest: list[tuple[str, datetime]]) -> Select[Any]:
        """Those slot rows with their jobs, by their unique key (a separate statement, so no
        planner is tempted to hash-join the whole runs table)."""
        runs, job = self.runs, self.job
        return (
            select(
                runs.c.job_name,
                runs.c.scheduled_for,
                runs.c.outcome,
                runs.c.enqueued_at,
                runs.c.job_id,
                job.c.state.label("job_state"),
                job.c.started_at,
                job.c.finished_at,
            )
            .select_from(runs.outerjoin(job, job.c.id == runs.c.job_id))
            .where(
                or_(
                    *(
                        and_(runs.c.job_name == name, runs.c.scheduled_for == slot)
                        for name, slot in newest
                    )
                )
            )
            .order_by(runs.c.job_name)
        )

    # ------------------------------------------------------------------ running them
    def run(
        self, since: datetime, now: datetime, *, slots: bool = True,
        durations: Callable[[Connection], Durations | None] | None = None,
    ) -> QueueStatus:  # fmt: skip
        """``durations``: per kind (done, p50, p95, max) read another way (``rolled.py``);
        when it answers None the exact reads serve."""
        history = self.store.attempts_enabled()
        approximate = False
        with self.store.transaction(readonly=True) as conn:
            self.store.one_snapshot(conn)
            kinds: dict[str, dict[str, Any]] = {}
            self._read_live(conn, now, kinds)
            succeeded = self._read_last(conn, kinds)
            other = durations(conn) if durations is not None else None
            if other is None:
                found = RunTimes(self.store).read(conn, since, history=history, counted=succeeded)
                for kind, values in found.items():
                    kinds.setdefault(kind, {}).update(values)
            else:
                approximate = True
                for kind, (n, p50, p95, top) in other.items():
                    entry = kinds.setdefault(kind, {})
                    entry.update(done=n, duration_p50=p50, duration_p95=p95, duration_max=top)
            slot_rows = self._read_slots(conn) if slots else []
        return QueueStatus(
            now=now,
            since=since,
            kinds=tuple(KindStatus(kind=k, **v) for k, v in sorted(kinds.items())),
            slots=tuple(slot_rows),
            approximate=approximate,
        )

    def _read_live(self, conn: Connection, now: datetime, kinds: dict[str, dict[str, Any]]) -> None:
        for r in conn.execute(self.live_sql(now)):
            entry = kinds.setdefault(r.kind, {})
            n = int(r.n)
            if r.state == JobState.OPEN:
                entry["ready"] = int(r.ready or 0)
                entry["scheduled"] = n - int(r.ready or 0)
                entry["oldest_ready_at"] = aware_or_none(r.oldest_ready)
            else:
                entry[r.state] = n

    def _read_last(self, conn: Connection, kinds: dict[str, dict[str, Any]]) -> set[str]:
        """Fills the last success / failure; answers the kinds with a done row."""
        succeeded: set[str] = set()
        for r in conn.execute(self.last_sql()):
            entry = kinds.setdefault(r.kind, {})
            entry["last_success" if r.state == JobState.DONE else "last_failure"] = aware_or_none(
                r.last
            )
            if r.state == JobState.DONE and r.last is not None:
                succeeded.add(r.kind)
        return succeeded

    def _read_slots(self, conn: Connection) -> Iterable[SlotStatus]:
        newest = [
            (r.job_name, aware_or_none(r.slot)) for r in conn.execute(self.newest_slots_sql())
        ]
        newest = [(name, slot) for name, slot in newest if slot is not None]
        if not newest:
            return []
        return [
            SlotStatus(
                job_name=r.job_name,
                slot=aware_or_none(r.scheduled_for),  # type: ignore[arg-type]
                outcome=SlotOutcome(r.outcome),
                enqueued_at=aware_or_none(r.enqueued_at),  # type: ignore[arg-type]
                job_id=int(r.job_id) if r.job_id is not None else None,
                job_state=JobState(r.job_state) if r.job_state is not None else None,
                started_at=aware_or_none(r.started_at),
                finished_at=aware_or_none(r.finished_at),
            )
            for r in conn.execute(self.slots_sql(newest))  # type: ignore[arg-type]
        ]

    # ------------------------------------------------------------------ dialect pieces
    def _no_index(self, column: Any) -> Any:
        return self.store.unindexed(column)

    @staticmethod
    def _distinct(table: Any, column: Any, name: str) -> Any:
        """Distinct values of an indexed column by hopping through the index (loose scan):
        one probe per value instead of reading every row."""
        hop = table.alias(f"{name}_hop")
        seed = select(func.min(column).label("value")).cte(name, recursive=True)
        step = select(
            select(func.min(hop.c[column.name]))
            .where(hop.c[column.name] > seed.c.value)
            .scalar_subquery()
            .label("value")
        ).where(seed.c.value.is_not(None))
        return seed.union_all(step)


class StatusOps(AttemptOps):
    """The ``status`` operation (``status``, ``status --check``, ``metrics``, ``verify``)."""

    def status(
        self, since: datetime, now: datetime | None = None, *, slots: bool = True
    ) -> QueueStatus:
        """Per-kind counts, oldest ready job, run-time percentiles of jobs done since ``since``,
        last success/failure, and the newest slot of each scheduled job (``slots``).

        Index-bounded: cost follows the live rows, the window and the number of kinds, not
        the number of done rows (see the module docstring). ``now`` defaults to the database
        clock (or the injected one).
        """
        return StatusQueries(self).run(since, now or self.db_now(), slots=slots)
