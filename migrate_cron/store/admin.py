"""Operator operations: look up, list, count, retry, cancel, clean up, and per-kind history.

Bulk changes run in chunks so a retry or cleanup of millions of rows never holds one long
transaction against the workers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Text,
    case,
    cast,
    delete,
    func,
    or_,
    select,
    update,
)

from migrate_cron.store.actions import ActionOps, Actor
from migrate_cron.store.base import aware
from migrate_cron.store.models import (
    CleanupResult,
    Job,
    KindHistory,
)
from migrate_cron.store.workers import WorkerOps
from migrate_cron.vocabulary import CANCELLABLE_STATES, RETRYABLE_STATES, Action, JobState

#: What a chunked change calls in its last transaction: (connection, ids changed when the
#: change named jobs, rows changed in all). The action log's record (``actions.py``).
Then = Callable[[Connection, list[int], int], object]


class AdminOps(ActionOps, WorkerOps):
    """What ``jobs``, ``cleanup``, ``verify`` and ``migrations`` need."""

    # ------------------------------------------------------------------ operator side
    def get(self, job_id: int) -> Job | None:
        job = self.tables.job
        with self.transaction(readonly=True) as conn:
            row = conn.execute(select(job).where(job.c.id == job_id)).first()
        return self._job(row) if row is not None else None

    def list_jobs(
        self,
        state: str | None = None,
        kind: str | None = None,
        limit: int = 50,
        *,
        ref: str | None = None,
        since: datetime | None = None,
        before_id: int | None = None,
        until: datetime | None = None,
        search: str | None = None,
        search_kinds: Sequence[str] = (),
    ) -> list[Job]:
        """Newest first. ``before_id`` pages: pass the last id of the previous page (an id
        cursor, not an offset, so rows added meanwhile neither repeat nor hide a job).

        ``since``/``until``: created at or after / before. ``search``: the text, any case,
        in the last error, the output or the payload (as JSON text), or the job is of one of
        ``search_kinds`` (the kinds whose registry command holds it: the registry is not in
        the database, so the caller names them)."""
        job = self.tables.job
        q = select(job).order_by(job.c.id.desc()).limit(limit)
        q = q.where(*self._job_filter(state, kind, ref, since, until, search, search_kinds))
        if before_id is not None:
            q = q.where(job.c.id < before_id)
        with self.transaction(readonly=True) as conn:
            return [self._job(r) for r in conn.execute(q)]

    def _job_filter(
        self,
        state: str | None,
        kind: str | None,
        ref: str | None,
        since: datetime | None,
        until: datetime | None,
        search: str | None,
        search_kinds: Sequence[str],
    ) -> list[Any]:
        """The conditions ``list_jobs`` and ``count_jobs`` share, so a count is of the list."""
        job = self.tables.job
        cond: list[Any] = []
        if state:
            cond.append(job.c.state == state)
        if kind:
            cond.append(job.c.kind == kind)
        if ref is not None:
            cond.append(job.c.ref == ref)
        if since is not None:
            cond.append(job.c.created_at >= since.astimezone(UTC))
        if until is not None:
            cond.append(job.c.created_at < until.astimezone(UTC))
        if search:
            # autoescape: a ``%`` or ``_`` the operator typed matches itself, not any text.
            found: list[Any] = [
                job.c.last_error.icontains(search, autoescape=True),
                job.c.output.icontains(search, autoescape=True),
                cast(job.c.payload, Text).icontains(search, autoescape=True),
            ]
            if search_kinds:
                found.append(job.c.kind.in_(list(search_kinds)))
            cond.append(or_(*found))
        return cond

    def retry(
        self,
        ids: Sequence[int] | None = None,
        *,
        kind: str | None = None,
        all_failed: bool = False,
        states: Sequence[str] = RETRYABLE_STATES,
        batch: int = 1000,
        actor: Actor | None = None,
    ) -> int:
        """Put failed (or cancelled) jobs back to ``open`` now, attempts reset. In chunks.
        With ``actor``, recorded in the action log (with the change, when it fits a chunk)."""
        job = self.tables.job
        cond: list[Any] = [job.c.state.in_(list(states))]
        then: Then | None = None
        if ids is not None:
            cond.append(job.c.id.in_(list(ids)))
            if actor is not None:
                then = self._then_jobs(actor, Action.RETRY, ids)
        elif kind is not None or all_failed:
            if kind is not None:
                cond.append(job.c.kind == kind)
            if actor is not None:
                then = self._then_kind(actor, Action.RETRY_FAILED, kind)
        else:
            return 0
        return self._chunked_update(
            cond,
            {
                "state": JobState.OPEN,
                "attempts": 0,
                "run_at": self.now_sql(),
                "locked_by": None,
                "locked_until": None,
                "finished_at": None,
            },
            batch,
            then,
        )

    def cancel(self, ids: Sequence[int], batch: int = 1000, *, actor: Actor | None = None) -> int:
        """Cancel jobs that have not finished; a worker never runs an open cancelled job and
        the fenced finish of a running one changes nothing. ``actor``: as for ``retry``."""
        job = self.tables.job
        cond = [
            job.c.id.in_(list(ids)),
            job.c.state.in_(CANCELLABLE_STATES),
        ]
        return self._chunked_update(
            cond,
            {"state": JobState.CANCELLED, "finished_at": self.now_sql(), "locked_until": None},
            batch,
            self._then_jobs(actor, Action.CANCEL, ids) if actor is not None else None,
        )

    def _chunked_update(
        self, cond: list[Any], values: dict[str, Any], batch: int, then: Then | None = None
    ) -> int:
        """``then`` runs in the last chunk's transaction: the one that changed the rows when
        they fit one chunk (fewer than ``batch``)."""
        job = self.tables.job
        total = 0
        last_id = 0
        changed: list[int] = []
        while True:
            with self.transaction() as conn:
                chunk = list(
                    conn.execute(
                        select(job.c.id)
                        .where(*cond, job.c.id > last_id)
                        .order_by(job.c.id)
                        .limit(batch)
                    ).scalars()
                )
                if chunk:
                    last_id = chunk[-1]
                    total += int(
                        conn.execute(
                            update(job).where(job.c.id.in_(chunk), *cond).values(**values)
                        ).rowcount
                    )
                    if then is not None:
                        changed += chunk
                if len(chunk) < batch:
                    if then is not None:
                        then(conn, changed, total)
                    return total

    def _then_jobs(self, actor: Actor, action: Action, ids: Sequence[int]) -> Then:
        return lambda conn, changed, _n: self._record_jobs(conn, actor, action, ids, set(changed))

    def _then_kind(self, actor: Actor, action: Action, kind: str | None) -> Then:
        detail = None if kind is not None else "every kind"
        row = {"kind": kind, "job_id": None, "detail": detail}
        return lambda conn, _ids, n: self._record(conn, actor, action, [{**row, "changed": n}])

    def cleanup(
        self,
        done_older_than: float | None = 7 * 86400,
        failed_older_than: float | None = 90 * 86400,
        batch: int = 1000,
        on_progress: Callable[[str, int], None] | None = None,
    ) -> CleanupResult:
        """Delete finished jobs in short chunks; keep the newest scheduled_runs row per job."""
        counts: dict[str, int] = {}
        for state, age in (
            (JobState.DONE, done_older_than),
            (JobState.FAILED, failed_older_than),
            (JobState.CANCELLED, failed_older_than),
        ):
            counts[state] = (
                0 if age is None else self._delete_finished(state, age, batch, on_progress)
            )
        runs = (
            0 if done_older_than is None else self._delete_runs(done_older_than, batch, on_progress)
        )
        # Worker rows age like done jobs, operators' actions like failed ones (an incident is
        # read back as long as its failed jobs are kept).
        workers = (
            0 if done_older_than is None else self._prune_workers(done_older_than, on_progress)
        )
        actions = (
            0
            if failed_older_than is None
            else self._prune_actions(failed_older_than, batch, on_progress)
        )
        return CleanupResult(
            counts[JobState.DONE], counts[JobState.FAILED], counts[JobState.CANCELLED], runs,
            workers, actions,
        )  # fmt: skip

    def _delete_finished(
        self, state: str, age: float, batch: int, on_progress: Callable[[str, int], None] | None
    ) -> int:
        job = self.tables.job
        total = 0
        while True:
            with self.transaction() as conn:
                ids = list(
                    conn.execute(
                        select(job.c.id)
                        .where(job.c.state == state, job.c.finished_at < self.after_sql(-age))
                        .order_by(job.c.state, job.c.finished_at)
                        .limit(batch)
                    ).scalars()
                )
                if not ids:
                    return total
                total += int(
                    conn.execute(
                        delete(job).where(job.c.id.in_(ids), job.c.state == state)
                    ).rowcount
                )
                if self._has_attempts(conn):  # a job's run history goes with it
                    att = self.tables.attempts
                    conn.execute(delete(att).where(att.c.job_id.in_(ids)))
            if on_progress:
                on_progress(state, total)

    def _delete_runs(
        self, age: float, batch: int, on_progress: Callable[[str, int], None] | None
    ) -> int:
        """Old slot rows, job by job, in chunks on the slot key (job_name, scheduled_for).

        The newest slot per job is read once, up front, and never deleted: the missed-run
        policies (run-once, backfill) start from it. Slots recorded after that read are newer
        and therefore kept too.
        """
        runs = self.tables.scheduled_runs
        with self.transaction(readonly=True) as conn:
            newest = conn.execute(
                select(runs.c.job_name, func.max(runs.c.scheduled_for)).group_by(runs.c.job_name)
            ).all()
        total = 0
        for name, keep in newest:
            while True:
                with self.transaction() as conn:
                    ids = list(
                        conn.execute(
                            select(runs.c.id)
                            .where(
                                runs.c.job_name == name,
                                runs.c.scheduled_for < keep,
                                runs.c.enqueued_at < self.after_sql(-age),
                            )
                            .order_by(runs.c.scheduled_for)
                            .limit(batch)
                        ).scalars()
                    )
                    if not ids:
                        break
                    total += int(conn.execute(delete(runs).where(runs.c.id.in_(ids))).rowcount)
                if on_progress:
                    on_progress("scheduled_runs", total)
        return total

    def count_jobs(
        self,
        ids: Sequence[int] | None = None,
        *,
        kind: str | None = None,
        states: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        search: str | None = None,
        search_kinds: Sequence[str] = (),
    ) -> int:
        """How many jobs match (for "retry 12 jobs?" prompts before a bulk change, and the
        jobs list's total); the filters mean what they mean in ``list_jobs``."""
        job = self.tables.job
        q = select(func.count()).select_from(job)
        q = q.where(*self._job_filter(None, kind, None, since, until, search, search_kinds))
        if ids is not None:
            q = q.where(job.c.id.in_(list(ids)))
        if states is not None:
            q = q.where(job.c.state.in_(list(states)))
        with self.transaction(readonly=True) as conn:
            return int(conn.execute(q).scalar_one())

    def kind_history(
        self, kinds: Sequence[str], since: datetime | None = None
    ) -> dict[str, KindHistory]:
        """Per kind, the rows created at or after ``since``: counts per state, retried jobs,
        jobs a worker claimed at least once, the newest success and the newest error on
        record. Every asked kind is in the result (all zero when it has no rows). Used by
        ``verify`` and ``migrations``."""
        job = self.tables.job
        out: dict[str, KindHistory] = {k: KindHistory(k) for k in kinds}
        if not out:
            return out
        names = list(out)
        with self.transaction(readonly=True) as conn:
            for i in range(0, len(names), 500):
                cond: list[Any] = [job.c.kind.in_(names[i : i + 500])]
                if since is not None:
                    cond.append(job.c.created_at >= since.astimezone(UTC))
                q = (
                    select(
                        job.c.kind,
                        job.c.state,
                        func.count().label("n"),
                        func.sum(case((job.c.attempts > 1, 1), else_=0)).label("retried"),
                        func.sum(case((job.c.attempts > 0, 1), else_=0)).label("claimed"),
                        func.max(job.c.finished_at).label("last"),
                    )
                    .where(*cond)
                    .group_by(job.c.kind, job.c.state)
                )
                for r in conn.execute(q):
                    h = out[r.kind]
                    changes: dict[str, Any] = {
                        r.state: getattr(h, r.state) + int(r.n),
                        "retried": h.retried + int(r.retried or 0),
                        "claimed": h.claimed + int(r.claimed or 0),
                    }
                    if r.state == JobState.DONE and r.last is not None:
                        changes["last_success"] = aware(r.last)
                    out[r.kind] = replace(h, **changes)
            for kind, h in out.items():
                if not (h.open or h.running or h.failed or h.cancelled):
                    continue
                cond = [job.c.kind == kind, job.c.last_error.is_not(None)]
                if since is not None:
                    cond.append(job.c.created_at >= since.astimezone(UTC))
                row = conn.execute(
                    select(job.c.id, job.c.last_error)
                    .where(*cond)
                    .order_by(job.c.id.desc())
                    .limit(1)
                ).first()
                if row is not None:
                    out[kind] = replace(h, last_error=row.last_error, last_error_job=row.id)
        return out
