"""The tables of one prefix, as ``schema.build_tables`` makes them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import MetaData, Table


@dataclass(frozen=True)
class Tables:
    """The tables for one prefix."""

    metadata: MetaData
    job: Table
    scheduled_runs: Table
    leases: Table
    side_effects: Table
    attempts: Table
    prefix: str
    workers: Table
    actions: Table
    tallies: Table
    trend_periods: Table

    @property
    def names(self) -> tuple[str, ...]:
        return (
            self.job.name,
            self.scheduled_runs.name,
            self.leases.name,
            self.side_effects.name,
            self.attempts.name,
            self.workers.name,
            self.actions.name,
            self.tallies.name,
            self.trend_periods.name,
        )
