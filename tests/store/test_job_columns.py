"""The claims build ``Job`` values by position (PostgreSQL from its RETURNING list, MariaDB and
SQLite from the job table's columns): a field added to ``Job`` or a column added to the table
in another order would shift every value silently, so the orders are pinned here."""

from __future__ import annotations

from dataclasses import fields

from migrate_cron.store.dialects.postgresql_claim import COLUMNS
from migrate_cron.store.models import Job
from migrate_cron.store.schema import build_tables


def test_job_fields_are_the_claims_column_order() -> None:
    names = [f.name for f in fields(Job)]
    assert names == list(COLUMNS)
    assert names == [c.name for c in build_tables("").job.c]
