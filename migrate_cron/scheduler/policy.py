"""Missed-run policies: what happens to the slots that passed while nothing was scheduling.

Pure functions over plain values. Given the slots of a job that fell due since its last
recorded slot and "now", a policy returns one decision per slot — enqueue it or record it as
skipped — so a scheduler restart, a paused VM, a long GC pause and a clock jump all go through
the same written rule, and ``migrate-cron simulate`` shows it without a database.

A slot is *on time* when ``now - slot <= misfire_grace``: it is enqueued whatever the policy
(cron itself starts a few seconds late). Older slots are *missed*:

- ``skip``: every missed slot is recorded as skipped; nothing extra runs.
- ``run-once``: the latest missed slot is enqueued, the older ones are recorded as skipped
  (``coalesced``).
- ``backfill``: missed slots are enqueued oldest first, at most ``max_backfill`` of them. When
  there are more, the *newest* ``max_backfill`` run and the older ones are recorded as skipped
  (``over-cap``): the gap is then one range starting right after the last recorded run, which
  is where an operator starts a manual backfill, and the history up to now has no hole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from migrate_cron.vocabulary import Policy

SKIP = Policy.SKIP
RUN_ONCE = Policy.RUN_ONCE
BACKFILL = Policy.BACKFILL
POLICIES = tuple(Policy)

ENQUEUE = "enqueue"
RECORD_SKIPPED = "skip"

#: Why a slot got its action (shown by ``simulate`` and in the scheduler's log).
ON_TIME = "on-time"
CATCH_UP = "catch-up"
MISSED = "missed"
COALESCED = "coalesced"
OVER_CAP = "over-cap"


class SlotSource(Protocol):
    """The part of ``crontab.schedule.Schedule`` the scheduler needs."""

    def iter_between(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Fire times ``f`` with ``start < f <= end``, oldest first, aware UTC."""
        ...

    def next_after(self, t: datetime) -> datetime:
        """The first fire time strictly after ``t``, aware UTC."""
        ...


@dataclass(frozen=True, slots=True)
class Decision:
    """One slot and what to do with it: ``enqueue`` or ``skip`` (record, do not run)."""

    slot: datetime
    action: str
    reason: str

    @property
    def enqueued(self) -> bool:
        return self.action == ENQUEUE


@dataclass(frozen=True, slots=True)
class MissedRunPolicy:
    """A job's rule for late slots; ``policy`` is one of ``skip``, ``run-once``, ``backfill``
    (a value read from the registry becomes its ``Policy`` member)."""

    policy: Policy = SKIP
    max_backfill: int = 10
    misfire_grace: float = 60.0

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy {self.policy!r} is not one of {', '.join(POLICIES)}")
        object.__setattr__(self, "policy", Policy(self.policy))
        if self.max_backfill < 0:
            raise ValueError("max_backfill must be 0 or more")
        if self.misfire_grace < 0:
            raise ValueError("misfire_grace must be 0 or more seconds")

    def is_on_time(self, slot: datetime, now: datetime) -> bool:
        return (now - slot).total_seconds() <= self.misfire_grace

    def decide(self, slots: Iterable[datetime], now: datetime) -> list[Decision]:
        """One decision per slot (slots oldest first, all at or before ``now``)."""
        missed: list[datetime] = []
        on_time: list[datetime] = []
        for slot in slots:
            (on_time if self.is_on_time(slot, now) else missed).append(slot)
        decisions = self._missed(missed)
        decisions.extend(Decision(s, ENQUEUE, ON_TIME) for s in on_time)
        return decisions

    def _missed(self, missed: Sequence[datetime]) -> list[Decision]:
        if not missed:
            return []
        return MISSED_RULES[self.policy](missed, self.max_backfill)


def _skip(missed: Sequence[datetime], _cap: int) -> list[Decision]:
    return [Decision(s, RECORD_SKIPPED, MISSED) for s in missed]


def _run_once(missed: Sequence[datetime], _cap: int) -> list[Decision]:
    older = [Decision(s, RECORD_SKIPPED, COALESCED) for s in missed[:-1]]
    return [*older, Decision(missed[-1], ENQUEUE, CATCH_UP)]


def _backfill(missed: Sequence[datetime], cap: int) -> list[Decision]:
    cut = max(len(missed) - cap, 0)
    dropped = [Decision(s, RECORD_SKIPPED, OVER_CAP) for s in missed[:cut]]
    return [*dropped, *(Decision(s, ENQUEUE, CATCH_UP) for s in missed[cut:])]


#: One rule per policy: adding a policy is a member of ``Policy`` and one entry here.
MISSED_RULES: dict[Policy, Callable[[Sequence[datetime], int], list[Decision]]] = {
    Policy.SKIP: _skip,
    Policy.RUN_ONCE: _run_once,
    Policy.BACKFILL: _backfill,
}


def plan(
    schedule: SlotSource, last: datetime, now: datetime, rule: MissedRunPolicy
) -> list[Decision]:
    """Decisions for every slot in ``(last, now]``: the whole policy in one call.

    ``last`` is the job's last recorded slot (or, for a job never seen, the moment the
    scheduler started minus the grace window: nothing before that counts as missed).
    """
    if now <= last:
        return []
    return rule.decide(schedule.iter_between(last, now), now)
