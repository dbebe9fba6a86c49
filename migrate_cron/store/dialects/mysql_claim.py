"""MySQL 8 / MariaDB 10.6+: the worker's side of the store — claim, a batch of successes
with its history, the history of other outcomes — as fixed texts built once per store
(``mysql_statements.py``), run through ``exec_driver_sql``, their rows read by position.
``MySQLStore`` (``mysql_store.py``) adds the producer's side and the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, timedelta
from typing import Any

from sqlalchemy import Connection

from migrate_cron.store.dialects.mysql_statements import (
    CLOCK_NOW,
    DONE_OUTCOME,
    SERVER_NOW,
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
        injected clock (tests) is the parameter ``c_clock`` in the same texts."""
        clock = SERVER_NOW if self._clock is None else CLOCK_NOW
        shape = (bool(kinds), bool(exclude), clock)
        params: dict[str, Any] = {"c_n": n, "c_window": 2 * n}
        if self._clock is not None:
            params["c_clock"] = self._clock.now().astimezone(UTC).replace(tzinfo=None)
        if kinds:
            params["c_kinds"] = list(kinds)
        if exclude:
            params["c_exclude"] = list(exclude)
        window = self._text(
            f"claim window {shape} False",
            lambda job: claim_window_sql(job, kinds=shape[0], exclude=shape[1], now=clock),
        )
        rows = claimed(conn.exec_driver_sql(window, params).fetchall())
        if len(rows) < n:
            got = [v[0] for v, _ in rows]
            again = self._text(
                f"claim window {shape} {bool(got)}",
                lambda job: claim_window_sql(
                    job, kinds=shape[0], exclude=shape[1], got=bool(got), now=clock
                ),
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
        the portable path reads the job rows and the runs present first."""
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
