"""Leadership through the lease row, on every backend. The lease's clock is injected into the
store, so expiry is decided without sleeping; the renewal timer is an injected monotonic."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from migrate_cron.clock import FakeClock
from migrate_cron.scheduler.leader import DEFAULT_LEASE_NAME, Leadership
from migrate_cron.store import Store, open_store


class Ticker:
    """A monotonic clock that moves when told (renewal timing)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def lease_clock() -> FakeClock:
    return FakeClock(datetime(2026, 6, 1, tzinfo=UTC))


@pytest.fixture
def timed_store(
    store: Store, db_url: str, table_prefix: str, lease_clock: FakeClock
) -> Iterator[Store]:
    s = open_store(db_url, prefix=table_prefix, clock=lease_clock)
    try:
        yield s
    finally:
        s.dispose()


def test_one_leader_at_a_time_and_takeover_after_the_ttl(
    timed_store: Store, lease_clock: FakeClock
) -> None:
    ticker = Ticker()
    a = Leadership(timed_store, ttl=6, holder="a", monotonic=ticker)
    b = Leadership(timed_store, ttl=6, holder="b", monotonic=ticker)
    assert a.ensure() is True
    assert b.ensure() is False
    assert timed_store.lease_holder(DEFAULT_LEASE_NAME)[0] == "a"  # type: ignore[index]

    # The leader renews every ttl/3, the standby retries every ttl/5.
    assert a.seconds_until_next_try() == pytest.approx(2.0)
    assert b.seconds_until_next_try() == pytest.approx(1.2)

    # The leader keeps renewing: the standby never gets in.
    for _ in range(5):
        ticker.t += 2
        lease_clock.advance(2)
        assert a.ensure() is True
        assert b.ensure() is False

    # The leader dies (stops renewing): once the lease has expired, the standby takes over.
    lease_clock.advance(5.9)
    ticker.t += 5.9
    assert b.ensure() is False
    lease_clock.advance(0.2)
    ticker.t += 0.2
    assert b.ensure() is False  # between retries the standby does not ask the database
    ticker.t += b.retry_interval
    assert b.ensure() is True
    assert timed_store.lease_holder(DEFAULT_LEASE_NAME)[0] == "b"  # type: ignore[index]

    # The old leader comes back: it is now the standby.
    ticker.t += 10
    assert a.ensure() is False


def test_release_hands_over_at_once(timed_store: Store) -> None:
    ticker = Ticker()
    a = Leadership(timed_store, ttl=30, holder="a", monotonic=ticker)
    b = Leadership(timed_store, ttl=30, holder="b", monotonic=ticker)
    assert a.ensure()
    assert not b.ensure()
    assert a.release() is True
    assert timed_store.lease_holder(DEFAULT_LEASE_NAME) is None
    ticker.t += b.retry_interval
    assert b.ensure()
    assert a.release() is False  # not the holder any more: nothing to release


def test_ensure_between_renewals_does_not_touch_the_database(timed_store: Store) -> None:
    ticker = Ticker()
    a = Leadership(timed_store, ttl=9, holder="a", monotonic=ticker)
    assert a.ensure()
    timed_store.release_lease(DEFAULT_LEASE_NAME, "a")  # behind its back
    ticker.t += 1
    assert a.ensure() is True  # cached until the renewal is due
    ticker.t += 2
    assert a.ensure() is True  # renewed (re-created) at the renewal time
    assert timed_store.lease_holder(DEFAULT_LEASE_NAME)[0] == "a"  # type: ignore[index]


def test_a_database_error_drops_leadership(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from migrate_cron.errors import DatabaseUnavailable

    broken = open_store(f"sqlite:///{tmp_path / 'missing-dir' / 'q.db'}")
    lead = Leadership(broken, ttl=5, holder="a")
    lead.is_leader = True
    with pytest.raises(DatabaseUnavailable):
        lead.ensure()
    assert lead.is_leader is False
    assert lead.seconds_until_next_try() == 0.0
    with pytest.raises(ValueError, match="TTL"):
        Leadership(broken, ttl=0)
    broken.dispose()
