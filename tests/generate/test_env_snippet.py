"""The env.py lines that keep autogenerate away from our tables."""

from __future__ import annotations

from typing import Any

from migrate_cron.generate.env_snippet import include_object_snippet


def test_include_object_snippet_hides_exactly_our_tables() -> None:
    namespace: dict[str, Any] = {}
    exec(include_object_snippet("mc_"), namespace)
    include = namespace["include_object"]
    for ours in (
        "mc_job",
        "mc_scheduled_runs",
        "mc_job_leases",
        "mc_side_effects",
        "mc_migrate_cron_alembic_version",
    ):
        assert include(None, ours, "table", True, None) is False
    assert include(None, "job", "table", True, None) is True
    assert include(None, "users", "table", True, None) is True
    assert include(None, "mc_job_claim_idx", "index", True, None) is True
