"""MySQL 8 / MariaDB 10.6+: the worker's side of the store — claim, a batch of successes
with its history, the history of other outcomes — as fixed texts built once per store
(``mysql_statements.py``), run through ``exec_driver_sql``, their rows read by position.
``MySQLStore`` (``mysql_store.py``) adds the producer's side and the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select, update

from migrate_cron.store.dialects.mysql_statements import (
    DONE_OUTCOME,
    attempts_insert_sql,
    attempts_params,
    claim_update_sql,
    claim_window_sql,
    claimed,
    done_update_sql,
    jobs_from_claim,
    runs_json,
    stamp,
)
from migrate_cron.store.models import AttemptRun, Job, JobState
from migrate_cron.store.store import Store

#: The second look of a short claim reads this many times the batch: past rows that other
#: claims of the moment hold (each at most a batch), without a locking scan.
WIDER = 8


class ClaimingStore(Store):
    """What a worker asks of MySQL/MariaDB, in the fewest round trips the server allows (no
    ``UPDATE … RETURNING``): a claim is the locked rows, their UPDATE and the COMMIT; a batch
    of successes, its fenced UPDATE, its history and the COMMIT."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The worker's statement texts, built on first use (``_text``).
        self._texts: dict[str, str] = {}

    def _claim(
        self,
        conn: Connection,
        worker_id: str,
        n: int,
        lease: float,
        kinds: Sequence[str] | None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """The ready rows locked by their key (``claim_window_sql``), then UPDATE the picked
        ids, in the caller's transaction: fixed texts (``mysql_statements.py``), built once
        per store, their rows read by position. The first window is twice the batch (a
        second worker claiming at the same moment finds its batch past the first one's); a
        claim that comes back short (other claims hold rows of the window, or fewer are
        ready) looks once more past what it took, over ``WIDER`` times the batch. An
        injected clock (tests) keeps the Core version."""
        if self._clock is not None:
            return self._claim_core(conn, worker_id, n, lease, kinds, exclude)
        shape = (bool(kinds), bool(exclude))
        params: dict[str, Any] = {"c_n": n, "c_window": 2 * n}
        if kinds:
            params["c_kinds"] = list(kinds)
        if exclude:
            params["c_exclude"] = list(exclude)
        window = self._text(
            f"claim window {shape} False",
            lambda job: claim_window_sql(job, kinds=shape[0], exclude=shape[1]),
        )
        rows = claimed(conn.exec_driver_sql(window, params).fetchall())
        if len(rows) < n:
            got = [v[0] for v, _ in rows]
            again = self._text(
                f"claim window {shape} {bool(got)}",
                lambda job: claim_window_sql(job, kinds=shape[0], exclude=shape[1], got=bool(got)),
            )
            params.update(c_n=n - len(rows), c_window=WIDER * n, c_got=got)
            rows += claimed(conn.exec_driver_sql(again, params).fetchall())
        if not rows:
            return []
        now = stamp(rows[-1][0][-1])  # the last statement's clock: every row was ready then
        until = now + timedelta(seconds=lease)
        conn.exec_driver_sql(
            self._text("claim update", claim_update_sql),
            {
                "c_ids": [v[0] for v, _ in rows],
                "c_worker": worker_id,
                "c_until": until.replace(tzinfo=None),
                "c_now": now.replace(tzinfo=None),
            },
        )
        return jobs_from_claim(rows, worker_id, now, until)

    def _claim_core(
        self,
        conn: Connection,
        worker_id: str,
        n: int,
        lease: float,
        kinds: Sequence[str] | None,
        exclude: Sequence[str] = (),
    ) -> list[Job]:
        """The claim built with Core, on the store's clock (``now_sql``)."""
        job = self.tables.job
        c = job.c
        rows = conn.execute(
            select(
                c.id,
                c.kind,
                c.ref,
                c.payload,
                c.attempts,
                c.max_attempts,
                c.run_at,
                c.scheduled_for,
                c.last_error,
                c.output,
                c.created_at,
                self.now_sql().label("_now"),
            )
            .where(*self._ready_filter(kinds, exclude))
            .order_by(job.c.run_at, job.c.id)
            .limit(n)
            .with_for_update(skip_locked=True)
        ).all()
        if not rows:
            return []
        now = rows[0]._now
        if isinstance(now, datetime) and now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        until = now + timedelta(seconds=lease)
        ids = [r.id for r in rows]
        conn.execute(
            update(job)
            .where(job.c.id.in_(ids))
            .values(
                state=JobState.RUNNING,
                attempts=job.c.attempts + 1,
                locked_by=worker_id,
                locked_until=until,
                started_at=now,
                finished_at=None,
            )
        )
        running = JobState.RUNNING
        return [
            Job(r[0], r[1], r[2], r[3], running, r[4] + 1, r[5], r[6], r[7], worker_id, until,
                r[8], r[9], r[10], now, None)
            for r in rows
        ]  # fmt: skip

    def _complete_in_one(
        self,
        worker_id: str,
        ids: Sequence[int],
        runs: Mapping[int, AttemptRun],
        attempts: Mapping[int, int],
    ) -> int | None:
        """Every job of the batch has its run and its attempt: one transaction of fixed texts,
        the fenced UPDATE (one per attempt number, a batch holds one or two) and the history's
        ``INSERT … SELECT`` — three round trips with the COMMIT, where the portable path's
        two reads before the insert made five."""
        if len(runs) != len(ids) or any(i not in runs or i not in attempts for i in ids):
            return None
        with self.transaction() as conn:
            if not self._has_attempts(conn):
                return None
            groups: dict[int, list[int]] = {}
            for i in ids:
                groups.setdefault(attempts[i], []).append(int(i))
            sql = self._text("done", done_update_sql)
            written = 0
            for attempt, group in groups.items():
                params = {"f_ids": group, "f_worker": worker_id, "f_attempt": attempt}
                written += conn.exec_driver_sql(sql, params).rowcount
            if written:
                ready = self._has_console(conn)
                rows = runs_json(runs, ready, attempts)
                params = attempts_params(rows, worker_id, DONE_OUTCOME, (JobState.DONE,))
                conn.exec_driver_sql(self._attempts_sql(ready, by_attempt=True), params)
            return int(written)

    def _insert_attempts(
        self,
        conn: Connection,
        worker_id: str,
        outcome: str,
        states: Sequence[str],
        runs: Mapping[int, AttemptRun],
    ) -> int:
        """One ``INSERT … SELECT`` from the runs as a JSON parameter (``JSON_TABLE``), where
        the portable path reads the job rows and the runs present first. An injected clock
        (tests) keeps the portable path."""
        if self._clock is not None:
            return super()._insert_attempts(conn, worker_id, outcome, states, runs)
        ready = self._has_console(conn)
        params = attempts_params(runs_json(runs, ready), worker_id, outcome, states)
        return int(conn.exec_driver_sql(self._attempts_sql(ready, False), params).rowcount)

    def _attempts_sql(self, ready: bool, by_attempt: bool) -> str:
        attempts = self.engine.dialect.identifier_preparer.format_table(self.tables.attempts)
        return self._text(
            f"attempts {ready} {by_attempt}",
            lambda job: attempts_insert_sql(job, attempts, ready, by_attempt),
        )

    def _text(self, name: str, build: Callable[[str], str]) -> str:
        """A statement text built once per store from the job table's quoted name."""
        made = self._texts.get(name)
        if made is None:
            job = self.engine.dialect.identifier_preparer.format_table(self.tables.job)
            made = self._texts[name] = build(job)
        return made
