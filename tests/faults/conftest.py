"""Fixtures of the fault tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["postgresql", "mariadb"])
def server_url(request: pytest.FixtureRequest) -> str:
    name = "pg_database" if request.param == "postgresql" else "mariadb_database"
    return str(request.getfixturevalue(name))
