"""Claiming jobs from the ``job`` table: what is ready, the claim's column values, and the
per-kind concurrency limit (a lock row per limited kind in ``leases``, counted under that
lock). The claim statement itself is the dialect's hook (``_claim``)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, func, select

from migrate_cron.store.attempts import AttemptOps
from migrate_cron.store.models import Job
from migrate_cron.vocabulary import JobState

#: The ``leases`` row each concurrency-limited kind's claims lock: ``concurrency:KIND``.
CONCURRENCY_LOCK_PREFIX = "concurrency:"
#: A lock row never expires (it is not a lease; only its row lock matters).
LOCK_ROW_EXPIRES = datetime(2999, 1, 1, tzinfo=UTC)
#: ``leases.name`` holds 200 characters; a kind name may have 200 too.
_LEASE_NAME_MAX = 200


def kind_lock_name(kind: str) -> str:
    """The ``leases`` row a limited kind's claims lock: ``concurrency:KIND``, or a digest of
    the kind when that would not fit the column."""
    name = f"{CONCURRENCY_LOCK_PREFIX}{kind}"
    if len(name) <= _LEASE_NAME_MAX:
        return name
    import hashlib

    return CONCURRENCY_LOCK_PREFIX + "sha256:" + hashlib.sha256(kind.encode()).hexdigest()


class ClaimOps(AttemptOps):
    """Worker operations that take jobs from the job table."""

    def claim(
        self,
        worker_id: str,
        n: int = 1,
        lease: float = 60.0,
        kinds: Sequence[str] | None = None,
        limits: Mapping[str, int] | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """Take up to ``n`` ready jobs: state running, attempts + 1, leased for ``lease`` s.
        ``kinds`` None means any kind; an empty list means none (a worker that can run nothing
        claims nothing). ``limits`` caps how many jobs of a kind run at once over every worker
        (the registry's ``concurrency``): see ``_claim_limited``. ``exclude``: kinds not to
        claim now (paused)."""
        if exclude and kinds is not None:
            kinds = [k for k in kinds if k not in exclude]
            exclude = ()
        if kinds is not None and not kinds:
            return []
        limited = {
            k: v
            for k, v in (limits or {}).items()
            if (kinds is None or k in kinds) and k not in exclude
        }
        if not limited:
            with self._claim_connection() as conn:
                jobs = self._claim(conn, worker_id, n, lease, kinds, exclude)
            return sorted(jobs, key=lambda j: (j.run_at, j.id))
        jobs = []
        for kind, limit in sorted(limited.items()):  # bounded kinds first: they never starve
            if len(jobs) >= n:
                break
            jobs.extend(self._claim_limited(worker_id, kind, limit, n - len(jobs), lease))
        rest = [k for k in kinds if k not in limited] if kinds is not None else None
        if len(jobs) < n and (rest is None or rest):
            with self._claim_connection() as conn:
                jobs.extend(
                    self._claim(conn, worker_id, n - len(jobs), lease, rest, [*limited, *exclude])
                )
        return sorted(jobs, key=lambda j: (j.run_at, j.id))

    def _claim_connection(self) -> contextlib.AbstractContextManager[Connection]:
        """Where a claim without a kind's lock runs: a transaction (a dialect whose claim is
        one statement may run it on its own, see PostgreSQL's)."""
        return self.transaction()

    def _claim_limited(
        self, worker_id: str, kind: str, limit: int, n: int, lease: float
    ) -> list[Job]:
        """Claim jobs of a kind that may run at most ``limit`` at once, race-free.

        One transaction: lock the kind's row in ``leases`` (``concurrency:KIND``; SELECT …
        FOR UPDATE on PostgreSQL and MySQL/MariaDB, the database lock of BEGIN IMMEDIATE on
        SQLite), count the kind's running jobs, claim at most ``limit - running``. A second
        claimer of the kind waits on that row until the first commits, then counts the jobs
        it started (READ COMMITTED reads the latest committed rows). A running job counts
        until it finishes or the reaper takes its expired lease back, so a worker that died
        holding one delays the kind by at most its lease."""
        job, leases = self.tables.job, self.tables.leases
        name = kind_lock_name(kind)
        lock = select(leases.c.name).where(leases.c.name == name).with_for_update()
        for _ in range(2):
            with self.transaction() as conn:
                if conn.execute(lock).first() is not None:
                    running = conn.execute(
                        select(func.count())
                        .select_from(job)
                        .where(job.c.kind == kind, job.c.state == JobState.RUNNING)
                    ).scalar_one()
                    room = min(limit - int(running), n)
                    return self._claim(conn, worker_id, room, lease, [kind]) if room > 0 else []
            # First claim of this kind: create its lock row in a transaction of its own (on
            # MySQL two inserters of one key that then lock it in the same transaction can
            # deadlock), then lock it.
            with self.transaction() as conn:
                self._insert_if_absent(
                    conn,
                    leases,
                    {"name": name, "holder": "concurrency", "expires_at": LOCK_ROW_EXPIRES},
                    ("name",),
                )
        return []

    def _ready_filter(self, kinds: Sequence[str] | None, exclude: Sequence[str] = ()) -> list[Any]:
        job = self.tables.job
        cond: list[Any] = [job.c.state == JobState.OPEN, job.c.run_at <= self.now_sql()]
        if kinds:
            cond.append(job.c.kind.in_(list(kinds)))
        if exclude:
            cond.append(job.c.kind.not_in(list(exclude)))
        return cond

    def _claim_values(self, worker_id: str, lease: float) -> dict[str, Any]:
        job = self.tables.job
        return {
            "state": JobState.RUNNING,
            "attempts": job.c.attempts + 1,
            "locked_by": worker_id,
            "locked_until": self.after_sql(lease),
            "started_at": self.now_sql(),
            "finished_at": None,
        }
