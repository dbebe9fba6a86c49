"""Which finishing write may land: fenced by the attempt, not by the clock.

A worker holds the outcome of attempt N of a job; whether it may still write it depends on
who has touched the row since the claim, never on whether the lease has run out:

- the row is still ours: ``locked_by = me``, running, ``attempts = N`` (the lease may have
  expired; as long as nobody took the job back, the run we did is the job's run);
- the reaper took it back and nobody has claimed it since: ``attempts = N``, nobody holds it
  (``locked_by`` and ``locked_until`` empty), and it is open (to run again) or failed (the
  reaper shelved it, out of attempts). The run did happen: recording it keeps the job from
  running a second time, and turns the reaper's guess ("lease expired") into what happened.

Anything else is left alone: another claim (``attempts`` moved on; a release gives the attempt
back, so a re-claim counts it again), an outcome already written (``locked_by`` is set by
every finishing write, so writing a batch again after a lost commit matches nothing), an
operator's cancel or retry (retry resets ``attempts`` to 0).

Without an attempt (callers that never claimed: tests, tools), only the first case holds, on
the lease's owner alone. The job table and business tables (``rows.py``) build their fence
here, with their own columns and state values: one condition for every finishing write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, Connection, and_, bindparam, or_, update
from sqlalchemy.sql.expression import TableClause

from migrate_cron.vocabulary import FINISHED_STATES, JobState


@dataclass(frozen=True)
class FenceColumns:
    """The columns a fence reads and the state tests it needs, for one table."""

    attempts: ColumnElement[Any]
    locked_by: ColumnElement[Any]
    locked_until: ColumnElement[Any]
    running: ColumnElement[bool]  # the row is being worked on
    taken_back: ColumnElement[bool]  # open or failed: where the reaper leaves a row

    def held_by(self, worker_id: str | ColumnElement[Any]) -> ColumnElement[bool]:
        """The lease is ``worker_id``'s: what a heartbeat renews."""
        return and_(self.locked_by == worker_id, self.running)

    def attempt_of(
        self, worker_id: str | ColumnElement[Any], attempt: int | ColumnElement[Any] | None
    ) -> ColumnElement[bool]:
        """``worker_id`` may still record attempt ``attempt`` (see the module docstring)."""
        if attempt is None:
            return self.held_by(worker_id)
        unclaimed = and_(self.locked_by.is_(None), self.locked_until.is_(None), self.taken_back)
        return and_(self.attempts == attempt, or_(self.held_by(worker_id), unclaimed))

    def update(
        self,
        conn: Connection,
        table: TableClause,
        worker_id: str,
        ids: Sequence[Any],
        attempts: Mapping[Any, int] | None,
        match: Callable[[list[Any]], ColumnElement[bool]],
        values: Mapping[str, Any],
    ) -> int:
        """Write ``values`` to the rows ``match(ids)`` whose attempt ``attempts`` names (per
        id; None: fenced on the lease), one statement per attempt number (a batch holds one
        or two); returns how many rows were written."""
        groups: dict[int | None, list[Any]] = {}
        for key in ids:
            groups.setdefault(attempts.get(key) if attempts else None, []).append(key)
        written = 0
        for attempt, group in groups.items():
            where = and_(match(group), self.attempt_of(worker_id, attempt))
            written += conn.execute(update(table).where(where).values(values)).rowcount
        return int(written)

    def update_prepared(
        self,
        conn: Connection,
        ids: Sequence[Any],
        worker_id: str,
        attempts: Mapping[Any, int],
        statement: Callable[[bool], Any],
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """``update`` with statements built once (``statement(by_attempt)``, see
        ``fenced_update``): the values travel as parameters ``f_ids``, ``f_worker`` and
        ``f_attempt``, plus ``extra`` (the statement's own, such as ``f_now``). Building the
        fenced UPDATE for every batch was a sixth of the worker's client CPU per job."""
        groups: dict[int | None, list[Any]] = {}
        for key in ids:
            groups.setdefault(attempts.get(key), []).append(key)
        written = 0
        for attempt, group in groups.items():
            params: dict[str, Any] = {**(extra or {}), "f_ids": group, "f_worker": worker_id}
            if attempt is not None:
                params["f_attempt"] = attempt
            written += conn.execute(statement(attempt is not None), params).rowcount
        return int(written)

    def fenced_update(
        self, table: TableClause, match: ColumnElement[bool], values: Mapping[str, Any]
    ) -> Callable[[bool], Any]:
        """The two statements ``update_prepared`` runs (fenced by the attempt, or by the lease
        alone), built on first use: ``match`` compares the ids with ``f_ids``; ``values`` may
        use ``f_worker``."""
        built: dict[bool, Any] = {}

        def statement(by_attempt: bool) -> Any:
            made = built.get(by_attempt)
            if made is None:
                worker: BindParameter[Any] = bindparam("f_worker")
                fence = (
                    self.attempt_of(worker, bindparam("f_attempt"))
                    if by_attempt
                    else self.held_by(worker)
                )
                made = built[by_attempt] = update(table).where(match, fence).values(values)
            return made

        return statement


def not_recorded(
    rows: Mapping[Any, tuple[str, int, str | None]], worker_id: str, attempts: Mapping[Any, int]
) -> dict[Any, str]:
    """For each job (id → attempt) whose row — read back as (state, attempts, locked_by),
    absent if deleted — does not hold that attempt's outcome by ``worker_id``: why."""
    reasons = {key: why_not_recorded(rows.get(key), worker_id, n) for key, n in attempts.items()}
    return {key: why for key, why in reasons.items() if why is not None}


def why_not_recorded(
    row: tuple[str, int, str | None] | None, worker_id: str, attempt: int
) -> str | None:
    """Why attempt ``attempt``'s outcome is not in a row read back as (state, attempts,
    locked_by) — None when it is (an earlier try of the same write landed)."""
    if row is None:
        return "the job no longer exists"
    state, attempts, locked_by = row
    if state == JobState.CANCELLED:
        return "cancelled by an operator"
    if attempts > attempt:
        return f"taken over by another attempt ({attempts})"
    if attempts < attempt:
        return "its attempts were reset (an operator's retry)"
    if locked_by == worker_id and state != JobState.RUNNING:
        return None
    if state in FINISHED_STATES:
        return f"already finished ({state})"
    return f"the job is {state} under {locked_by or 'nobody'}"
