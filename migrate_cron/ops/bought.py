"""What the switch from cron has bought, per job: the figures the migration board, the job's
own place, ``status --json`` (``since_switch``) and the metrics (``migrate_cron_since_switch``)
show, from one read (``Store.switch_gains``) and one rule for "since the switch".

A job counts from its switch: the first ``migrate`` of any of its crontab lines (the registry's
``switched_at``); a job the registry runs without ever having been switched (written for the
queue from the start) counts everything on record; a job still on cron has nothing to count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from migrate_cron.vocabulary import Mode, Tally

if TYPE_CHECKING:
    from migrate_cron.registry import JobSpec
    from migrate_cron.store import Store
    from migrate_cron.store.models import SwitchGains

#: The metric's ``what`` for the jobs a retry saved (the others are ``Tally`` words).
RESCUED = "rescued"

#: (``SwitchGains`` field, the metric's ``what``, what it means), in the order shown.
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("rescued", RESCUED, "runs that failed, then succeeded on a retry (cron would have lost them)"),
    ("overlap_held", Tally.OVERLAP_HELD.value, "overlapping starts held back"),
    ("missed_run", Tally.MISSED_RUN.value, "slots missed while down, run late by the policy"),
    (
        "missed_skipped",
        Tally.MISSED_SKIPPED.value,
        "slots missed while down, skipped by the policy",
    ),
    ("duplicate_fires", Tally.DUPLICATE_FIRE.value, "slots fired by several hosts, run once"),
)


def switched_at(spec: JobSpec) -> datetime | None:
    """The job's first switch (its earliest-switched crontab line), or None."""
    times = [m.switched_at for m in spec.migrations]
    return min(times) if times else None


def since_switch(store: Store, specs: Iterable[JobSpec]) -> dict[str, SwitchGains]:
    """Per job off cron, what the queue did for it since its switch (see the module)."""
    since = {s.name: switched_at(s) for s in specs if s.mode != Mode.CRON}
    return store.switch_gains(since) if since else {}


def gains_to_dict(gains: SwitchGains) -> dict[str, Any]:
    """One job's figures for ``--json``: ``since`` ISO 8601 UTC (null: all on record)."""
    since = gains.since.astimezone(UTC).isoformat() if gains.since else None
    return {"since": since, **{field: getattr(gains, field) for field, _, _ in FIGURES}}


def total(gains: SwitchGains) -> int:
    """Every figure added up: 0 means the switch has shown nothing yet."""
    return sum(getattr(gains, field) for field, _, _ in FIGURES)


@dataclass(frozen=True)
class Bought:
    """One job's figures as a page shows them (``web/templates/bought.html``)."""

    kind: str
    since: datetime | None
    #: (the metric's ``what``, what it means, the count), in ``FIGURES`` order.
    figures: tuple[tuple[str, str, int], ...]

    @property
    def total(self) -> int:
        return sum(n for _, _, n in self.figures)


def bought(gains: SwitchGains) -> Bought:
    return Bought(
        gains.kind,
        gains.since,
        tuple((what, words, getattr(gains, attr)) for attr, what, words in FIGURES),
    )


def bought_for(store: Store, spec: JobSpec) -> Bought | None:
    """One job's figures (a job page's section); None while the job is still on cron."""
    found = since_switch(store, [spec]).get(spec.name)
    return None if found is None else bought(found)


def added_up(rows: Iterable[Bought]) -> tuple[tuple[str, str, int], ...]:
    """The figures of several jobs added up (the migration board's summary)."""
    sums = {what: 0 for _, what, _ in FIGURES}
    for row in rows:
        for what, _, n in row.figures:
            sums[what] += n
    return tuple((what, words, sums[what]) for _, what, words in FIGURES)
