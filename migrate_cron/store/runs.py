"""The ``scheduled_runs`` table: one row per (job_name, scheduled_for) slot.

The UNIQUE slot key is what makes several hosts or schedulers produce one job per slot: the slot
row and its job are written in one transaction, insert-if-absent on the key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    bindparam,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from migrate_cron.store.base import DEFAULT_MAX_ATTEMPTS, aware
from migrate_cron.store.jobs import JobOps
from migrate_cron.store.keys import slot_ref
from migrate_cron.store.models import RunResult
from migrate_cron.store.slot_write import SlotWrite, SqlAlchemyCursor
from migrate_cron.store.tallies import TallyOps
from migrate_cron.vocabulary import JobState, SlotOutcome, Tally

#: A slot: (job_name, scheduled_for in UTC).
Slot = tuple[str, datetime]


class RunOps(JobOps, TallyOps):
    """Slot bookkeeping for scheduled jobs, and the tallies of what the writes found
    (``tallies.py``): a slot already recorded, a start held back, a missed slot."""

    def enqueue_run(
        self,
        job_name: str,
        scheduled_for: datetime,
        *,
        payload: Any = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        outcome: str = SlotOutcome.ENQUEUED,
        kind: str | None = None,
        skip_if_running: bool = False,
        hold_if_running: bool = False,
    ) -> RunResult:
        """Record the slot (job_name, scheduled_for) and, unless skipped, enqueue its job.

        Both rows are written in one transaction; the UNIQUE slot key makes concurrent calls
        from several hosts or schedulers produce one job (the others count a duplicate fire).
        ``skip_if_running`` (the job's ``overlap = "skip"``) records the slot as skipped while
        a job of its kind is running, as ``flock -n`` made cron skip it; ``hold_if_running``
        (``overlap = "wait"``) enqueues it to wait for that run. Both count the start held.
        """
        if outcome not in tuple(SlotOutcome):
            raise ValueError(f"outcome must be 'enqueued' or 'skipped', not {outcome!r}")
        with self.transaction() as conn:
            return self._enqueue_run(
                conn, job_name, scheduled_for, payload, max_attempts, SlotOutcome(outcome), kind,
                skip_if_running, hold_if_running,
            )  # fmt: skip

    def enqueue_runs(
        self,
        requests: Sequence[tuple[str, datetime, int]],
        batch: int = 200,
        skip_running: Collection[str] = (),
        hold_running: Collection[str] = (),
        late: Collection[Slot] = (),
    ) -> list[RunResult]:
        """``enqueue_run`` for many (job_name, scheduled_for, max_attempts) slots, ``batch``
        per transaction; results in request order. Jobs named in ``skip_running`` get
        ``skip_if_running``, in ``hold_running`` ``hold_if_running``. A slot in ``late``
        ((job_name, slot in UTC): one the scheduler missed, run late by its policy) counts a
        missed run when this call enqueues it.

        A chunk is written in bulk: one read of the slots already recorded, one of the kinds
        running (for ``skip_running``), one multi-row insert of the new jobs and one of the
        new slot rows — a handful of statements for 200 slots instead of four per slot. If a
        concurrent writer (a scheduler taking over, a host's ``enqueue``) recorded one of the
        slots in between, the unique keys refuse the chunk; it is then written again slot by
        slot, insert-if-absent, in (job_name, slot) order so writers cannot deadlock.
        """
        results: list[RunResult | None] = [None] * len(requests)
        order = sorted(
            range(len(requests)), key=lambda i: (requests[i][0], requests[i][1].astimezone(UTC))
        )
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            try:
                with self.transaction() as conn:
                    written = self._enqueue_runs_bulk(
                        conn, [requests[i] for i in chunk], skip_running, hold_running, late
                    )
            except IntegrityError:
                written = None
            if written is None:
                with self.transaction() as conn:
                    written = [
                        self._enqueue_run(
                            conn,
                            name,
                            slot,
                            None,
                            max_attempts,
                            SlotOutcome.ENQUEUED,
                            None,
                            name in skip_running,
                            name in hold_running,
                        )
                        for name, slot, max_attempts in (requests[i] for i in chunk)
                    ]
                    caught_up = Counter(
                        name
                        for (name, slot, _), r in zip(
                            (requests[i] for i in chunk), written, strict=True
                        )
                        if r.created
                        and r.job_id is not None
                        and (name, slot.astimezone(UTC)) in late
                    )
                    for name, n in sorted(caught_up.items()):
                        self._tally(conn, name, Tally.MISSED_RUN, n)
            for i, result in zip(chunk, written, strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    def _enqueue_runs_bulk(
        self,
        conn: Connection,
        requests: Sequence[tuple[str, datetime, int]],
        skip_running: Collection[str],
        hold_running: Collection[str] = (),
        late: Collection[Slot] = (),
    ) -> list[RunResult]:
        """One chunk of ``enqueue_runs`` in a few statements (see there), and its tallies."""
        job = self.tables.job
        keys = [(name, slot.astimezone(UTC)) for name, slot, _ in requests]
        known: dict[tuple[str, datetime], RunResult] = {}
        for row in self._recorded_slots(conn, keys):
            known[(row.job_name, aware(row.scheduled_for))] = RunResult(
                False, row.job_id, row.outcome
            )
        fresh: dict[tuple[str, datetime], int] = {}  # new slot -> its max_attempts
        for key, (_, _, max_attempts) in zip(keys, requests, strict=True):
            if key not in known:
                fresh.setdefault(key, max_attempts)
        busy: set[str] = set()
        watched = sorted({n for n, _ in fresh} & (set(skip_running) | set(hold_running)))
        if watched:
            busy = set(
                conn.execute(
                    select(job.c.kind)
                    .where(
                        job.c.kind.in_(watched),
                        job.c.state == JobState.RUNNING,
                        job.c.locked_until > self.now_sql(),  # a dead worker's run does not count
                    )
                    .distinct()
                ).scalars()
            )
        skipping = busy & set(skip_running)
        enqueued = [key for key in fresh if key[0] not in skipping]
        job_ids = self._write_slots(
            conn,
            [(name, slot, _outcome(name in skipping)) for name, slot in fresh],
            [(name, slot, fresh[(name, slot)]) for name, slot in enqueued],
        )
        counted: Counter[tuple[str, Tally]] = Counter()
        counted.update((key[0], Tally.DUPLICATE_FIRE) for key in keys if key in known)
        counted.update((key[0], Tally.OVERLAP_HELD) for key in fresh if key[0] in busy)
        counted.update((key[0], Tally.MISSED_RUN) for key in enqueued if key in late)
        for (name, what), n in sorted(counted.items()):
            self._tally(conn, name, what, n)
        ids = dict(zip(enqueued, job_ids, strict=True))
        results: list[RunResult] = []
        for key in keys:
            if key in known:
                results.append(known[key])
                continue
            made = RunResult(True, ids.get(key), _outcome(key[0] in skipping))
            results.append(made)
            known[key] = RunResult(False, made.job_id, made.outcome)  # a repeat in the chunk
        return results

    def _recorded_slots(
        self, conn: Connection, keys: Sequence[tuple[str, datetime]]
    ) -> Iterable[Any]:
        """The slot rows (job_name, scheduled_for, job_id, outcome) already recorded among
        ``keys``: here every recorded slot of the chunk's names at the chunk's times (a few
        more than asked when names and times cross, which the caller ignores)."""
        runs = self.tables.scheduled_runs
        return conn.execute(
            self._slot_results().where(
                runs.c.job_name.in_(sorted({n for n, _ in keys})),
                runs.c.scheduled_for.in_(sorted({s for _, s in keys})),
            )
        )

    def _slot_results(self) -> Select[Any]:
        """What ``_enqueue_runs_bulk`` reads of a recorded slot to answer for it."""
        runs = self.tables.scheduled_runs
        return select(runs.c.job_name, runs.c.scheduled_for, runs.c.job_id, runs.c.outcome)

    def _write_slots(
        self,
        conn: Connection,
        slots: Sequence[tuple[str, datetime, str]],
        jobs: Sequence[tuple[str, datetime, int]],
    ) -> list[int]:
        """Record a chunk's new (job_name, scheduled_for, outcome) slot rows and insert the ready
        job of each enqueued (job_name, scheduled_for, max_attempts) slot, linked to its row,
        and wake the workers of their kinds; returns the jobs' ids in ``jobs``' order. Slot
        rows first, then jobs, then the link: the order ``enqueue_run`` takes its locks in, so
        a bulk writer and a single one wait for each other instead of deadlocking."""
        if not slots and not jobs:
            return []
        now = conn.execute(select(self.now_sql())).scalar_one()
        if slots:
            self._insert_slot_rows(conn, slots, now)
        ids = self._insert_slot_jobs(conn, jobs, now)
        if ids:
            self._link_slots(
                conn, [(name, slot, i) for (name, slot, _), i in zip(jobs, ids, strict=True)]
            )
        self._notify_kinds(conn, sorted({name for name, _, _ in jobs}))
        return ids

    def _insert_slot_rows(
        self, conn: Connection, rows: Sequence[tuple[str, datetime, str]], now: datetime
    ) -> None:
        """Insert (job_name, scheduled_for, outcome) slot rows enqueued at ``now``."""
        conn.execute(
            insert(self.tables.scheduled_runs),
            [
                {"job_name": name, "scheduled_for": slot, "enqueued_at": now, "outcome": outcome}
                for name, slot, outcome in rows
            ],
        )

    def _insert_slot_jobs(
        self, conn: Connection, slots: Sequence[tuple[str, datetime, int]], now: datetime
    ) -> list[int]:
        """Insert the ready job of each (job_name, scheduled_for, max_attempts) slot, returning
        their ids in the slots' order: one multi-row statement where the driver can return ids
        in order (PostgreSQL, SQLite, MariaDB), else one insert per row (MySQL) in the same
        transaction."""
        if not slots:
            return []
        rows = [
            {
                "kind": name,
                "ref": slot_ref(slot),
                "payload": None,
                "state": JobState.OPEN,
                "attempts": 0,
                "max_attempts": max_attempts,
                "run_at": now,
                "scheduled_for": slot,
                "created_at": now,
            }
            for name, slot, max_attempts in slots
        ]
        job = self.tables.job
        if conn.dialect.insert_executemany_returning_sort_by_parameter_order:
            stmt = insert(job).returning(job.c.id, sort_by_parameter_order=True)
            return [int(i) for i in conn.execute(stmt, rows).scalars()]
        ids: list[int] = []
        for row in rows:
            inserted = conn.execute(insert(job).values(**row)).inserted_primary_key
            assert inserted is not None
            ids.append(int(inserted[0]))
        return ids

    def _link_slots(self, conn: Connection, links: Sequence[tuple[str, datetime, int]]) -> None:
        """Point each (job_name, scheduled_for) slot row at its job id: one UPDATE per row (the
        driver's executemany)."""
        runs = self.tables.scheduled_runs
        conn.execute(
            update(runs)
            .where(
                runs.c.job_name == bindparam("slot_name"),
                runs.c.scheduled_for == bindparam("slot_at"),
            )
            .values(job_id=bindparam("slot_job")),
            [{"slot_name": n, "slot_at": at, "slot_job": i} for n, at, i in links],
        )

    def _enqueue_run(
        self,
        conn: Connection,
        job_name: str,
        scheduled_for: datetime,
        payload: Any,
        max_attempts: int,
        outcome: SlotOutcome,
        kind: str | None,
        skip_if_running: bool = False,
        hold_if_running: bool = False,
    ) -> RunResult:
        """The cron slot's write (``slot_write.py``): the dialect's named statements, the
        ones ``direct.py`` runs on the driver's cursor, here on ``conn``."""
        return self._slot_write().run(
            SqlAlchemyCursor(conn), job_name, scheduled_for, max_attempts=max_attempts,
            kind=kind, payload=payload, outcome=outcome, skip_if_running=skip_if_running,
            hold_if_running=hold_if_running,
        )  # fmt: skip

    def _slot_write(self) -> SlotWrite:
        """The slot write for this store's database and prefix (built once)."""
        if self._slot_writer is None:
            dialect = self.dialect
            clock = None if self._clock is None else self._clock.now
            self._slot_writer = SlotWrite.of(
                dialect.recipe().STATEMENTS, dialect.stamp, self.prefix, clock
            )
        return self._slot_writer

    def last_run(self, job_name: str) -> datetime | None:
        """The newest recorded slot of a job (enqueued or skipped)."""
        runs = self.tables.scheduled_runs
        with self.transaction(readonly=True) as conn:
            return conn.execute(
                select(func.max(runs.c.scheduled_for)).where(runs.c.job_name == job_name)
            ).scalar_one_or_none()

    def last_runs(self, job_names: Sequence[str] | None = None) -> dict[str, datetime]:
        """The newest recorded slot per job (the scheduler loads 10,000 jobs at start and on
        every leadership change). Jobs never recorded are absent. Up to 500 names: one IN
        query; more (or None): one GROUP BY over the (job_name, scheduled_for) unique index."""
        runs = self.tables.scheduled_runs
        q = select(runs.c.job_name, func.max(runs.c.scheduled_for)).group_by(runs.c.job_name)
        names = None if job_names is None else set(job_names)
        if names is not None and len(names) <= 500:
            q = q.where(runs.c.job_name.in_(sorted(names)))
        with self.transaction(readonly=True) as conn:
            rows = conn.execute(q).all()
        return {r[0]: r[1] for r in rows if names is None or r[0] in names}

    def record_skipped(
        self,
        job_name: str,
        slots: Sequence[datetime],
        batch: int = 500,
        *,
        tally: Tally | None = None,
    ) -> list[datetime]:
        """Record slots as ``skipped`` (no job), insert-if-absent; returns the slots newly
        recorded. In transactions of ``batch`` rows: a long outage of a minutely job can mean
        many thousands of rows. ``tally`` (the scheduler's missed slots) counts the slots
        newly recorded, in their own transaction."""
        runs = self.tables.scheduled_runs
        fresh: list[datetime] = []
        for i in range(0, len(slots), batch):
            with self.transaction() as conn:
                before = len(fresh)
                for s in slots[i : i + batch]:
                    slot = s.astimezone(UTC)
                    values = {
                        "job_name": job_name,
                        "scheduled_for": slot,
                        "enqueued_at": self.now_sql(),
                        "outcome": SlotOutcome.SKIPPED,
                    }
                    key = ("job_name", "scheduled_for")
                    if self._insert_if_absent(conn, runs, values, key) is not None:
                        fresh.append(slot)
                if tally is not None:
                    self._tally(conn, job_name, tally, len(fresh) - before)
        return fresh

    def runs(self, job_name: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        runs = self.tables.scheduled_runs
        q = select(runs).order_by(runs.c.scheduled_for.desc(), runs.c.id.desc()).limit(limit)
        if job_name is not None:
            q = q.where(runs.c.job_name == job_name)
        with self.transaction(readonly=True) as conn:
            return [dict(r._mapping) for r in conn.execute(q)]


def _outcome(busy: bool) -> SlotOutcome:
    """A new slot's outcome: skipped while a run of its ``overlap = "skip"`` job is running."""
    return SlotOutcome.SKIPPED if busy else SlotOutcome.ENQUEUED
