"""The Prometheus collector served over real HTTP (127.0.0.1, a free port) and parsed back."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families

from migrate_cron.metrics import metrics_registry
from migrate_cron.store import Store, open_store
from migrate_cron.store.leases import SCHEDULER_LEASE
from migrate_cron.vocabulary import Tally
from tests.ops.helpers import EXPECTED, SPECS, build_timeline, clocked_store


@contextmanager
def serving(store: Store, window: float) -> Iterator[str]:
    server, thread = start_http_server(
        0, addr="127.0.0.1", registry=metrics_registry(store, window, SPECS)
    )
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        assert resp.status == 200
        body = resp.read().decode()
    samples = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_metrics_endpoint_reports_the_three_numbers_per_kind(
    db_url: str, table_prefix: str
) -> None:
    with clocked_store(db_url, table_prefix) as (store, clock):
        build_timeline(store, clock)
        store.tally("nightly", Tally.MISSED_SKIPPED, 3)
        with serving(store, 86400) as url:
            samples = scrape(url)
    assert value(samples, "migrate_cron_up") == 1
    # `job` is Prometheus' own label (the scrape target): every series names the job `kind`,
    # the label the worker's counters use too.
    labels = {key for _, pairs in samples for key, _ in pairs}
    assert "job" not in labels and "cron_job" not in labels
    since = "migrate_cron_since_switch"
    assert value(samples, since, kind="nightly", what="missed-skipped") == 3
    assert value(samples, since, kind="nightly", what="rescued") == 0
    assert value(samples, since, kind="every5", what="duplicate-fire") == 0
    for kind, want in EXPECTED.items():
        assert value(samples, "migrate_cron_failed_jobs", kind=kind) == want["failed"]
        assert value(samples, "migrate_cron_oldest_ready_age_seconds", kind=kind) == pytest.approx(
            want["oldest_ready_age"] or 0.0, abs=1e-3
        )
        for state in ("ready", "scheduled", "running", "failed", "cancelled"):
            assert value(samples, "migrate_cron_jobs", kind=kind, state=state) == want[state]
        assert value(samples, "migrate_cron_jobs_done_window", kind=kind) == want["done"]
        for quantile, key in (
            ("0.5", "duration_p50"),
            ("0.95", "duration_p95"),
            ("1", "duration_max"),
        ):
            labels = (("kind", kind), ("quantile", quantile))
            got = samples.get(("migrate_cron_job_duration_seconds", labels))
            if want[key] is None:
                assert got is None
            else:
                assert got == pytest.approx(want[key], abs=1e-3)
        if want["schedule"] is not None:
            lag = value(samples, "migrate_cron_schedule_lag_seconds", kind=kind)
            assert lag == pytest.approx(want["schedule"]["lag"], abs=1e-3)
    assert value(samples, "migrate_cron_oldest_ready_age_seconds", kind="email") == pytest.approx(
        420
    )
    assert value(samples, "migrate_cron_job_duration_seconds", kind="email", quantile="0.95") == (
        pytest.approx(19.05, abs=1e-3)
    )


def test_metrics_scrape_answers_up_0_when_the_database_is_gone(tmp_path: Any) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'missing-tables.db'}")
    try:
        with serving(store, 3600) as url:
            samples = scrape(url)
    finally:
        store.dispose()
    assert value(samples, "migrate_cron_up") == 0
    assert not any(name == "migrate_cron_jobs" for name, _ in samples)


def test_the_scheduler_leader_and_its_lease_are_exported(db_url: str, table_prefix: str) -> None:
    with clocked_store(db_url, table_prefix) as (store, clock):
        build_timeline(store, clock)
        with serving(store, 86400) as url:
            before = scrape(url)
            assert store.acquire_lease(SCHEDULER_LEASE, "web1:4242:ab", 15)
            held = scrape(url)
            clock.advance(40)  # the leader stopped renewing
            expired = scrape(url)
    assert not any(name.startswith("migrate_cron_scheduler_") for name, _ in before)
    assert value(held, "migrate_cron_scheduler_leader", holder="web1:4242:ab") == 1
    assert value(held, "migrate_cron_scheduler_lease_remaining_seconds") == pytest.approx(15, abs=1)
    assert not any(name == "migrate_cron_scheduler_leader" for name, _ in expired)
    assert value(expired, "migrate_cron_scheduler_lease_remaining_seconds") == pytest.approx(
        -25, abs=1
    )
