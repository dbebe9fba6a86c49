from __future__ import annotations

import pytest

from migrate_cron.config import mask_url, validate_prefix
from migrate_cron.errors import UsageError
from migrate_cron.store.dialects import normalize_url


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://app:s3cr%40t@db/app", "postgresql://app:***@db/app"),
        (
            "mariadb+pymysql://root:pw@127.0.0.1:3306/test",
            "mariadb+pymysql://root:***@127.0.0.1:3306/test",
        ),
        ("postgresql://app@db/app", "postgresql://app@db/app"),
        ("sqlite:///migrate-cron.db", "sqlite:///migrate-cron.db"),
        (
            "error: cannot reach mysql://u:p@h/db (timeout)",
            "error: cannot reach mysql://u:***@h/db (timeout)",
        ),
    ],
)
def test_mask_url_hides_passwords(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_driverless_urls_get_the_drivers_we_ship() -> None:
    assert normalize_url("postgresql://h/db") == "postgresql+psycopg://h/db"
    assert normalize_url("postgres://h/db") == "postgresql+psycopg://h/db"
    assert normalize_url("mysql://h/db") == "mysql+pymysql://h/db"
    assert normalize_url("mariadb://h/db") == "mariadb+pymysql://h/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"
    assert normalize_url("postgresql+psycopg://h/db") == "postgresql+psycopg://h/db"


def test_table_prefix_must_be_an_identifier() -> None:
    assert validate_prefix("mc_") == "mc_"
    with pytest.raises(UsageError):
        validate_prefix("x; drop table job")
