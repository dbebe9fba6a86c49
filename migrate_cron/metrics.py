"""Prometheus metrics, computed at scrape time from the queue tables.

A custom collector: each scrape runs ``Store.status`` (one read transaction of index-bounded
statements, see ``store/status.py``) and reports what it found. Nothing is counted in process
memory, so any number of metrics servers (or none) give the same answer, and a restart loses
nothing. If the database cannot be read, the scrape still succeeds with
``migrate_cron_up 0`` so the alert says "cannot see the queue" rather than "target down".

The three numbers to alert on, per kind: ``migrate_cron_oldest_ready_age_seconds``,
``migrate_cron_failed_jobs``, ``migrate_cron_job_duration_seconds``; plus
``migrate_cron_schedule_lag_seconds`` per scheduled job. Every series about a job names it with
the label ``kind``, as the worker's counters do (``worker/metrics.py``): a scheduled job's name
is its kind, so one label joins them (never ``job``: Prometheus keeps it for the scrape target,
and a ``job`` label here would be renamed ``exported_job``). Lag is only reported for slots
someone promised (see ``ops.status.unpromised``). Liveness: the scheduler leader's lease. What
the switch from cron has bought (``ops.bought``): ``migrate_cron_since_switch``, per kind and
``what``. Counters (``_total``) are process facts: ``worker --metrics-port``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from migrate_cron.ops.bought import FIGURES
from migrate_cron.store.leases import SCHEDULER_LEASE
from migrate_cron.vocabulary import LIVE_COUNTS

if TYPE_CHECKING:
    from migrate_cron.ops.status import StatusReport
    from migrate_cron.registry import JobSpec
    from migrate_cron.store import Store

log = logging.getLogger(__name__)

QUANTILES = (("0.5", "duration_p50"), ("0.95", "duration_p95"), ("1", "duration_max"))


class QueueCollector(Collector):
    """Reads the queue on every scrape; ``window`` bounds done counts and durations."""

    def __init__(self, store: Store, window: float = 3600.0, specs: Sequence[JobSpec] = ()):
        self.store = store
        self.window = window
        self.specs = list(specs)

    def describe(self) -> Iterable[Metric]:
        # Declared up front so registering does not query the database.
        return list(self._families())

    def collect(self) -> Iterator[Metric]:
        from migrate_cron.ops.bought import since_switch
        from migrate_cron.ops.status import build_report

        started = time.perf_counter()
        try:
            now = self.store.db_now()
            status = self.store.status(now - timedelta(seconds=self.window), now)
            report = build_report(status, self.specs)
            report = replace(report, since_switch=since_switch(self.store, self.specs))
            held = self.store.lease_holder(SCHEDULER_LEASE)
            if held is not None:
                report = replace(report, leader=(held[0], (held[1] - now).total_seconds()))
        except Exception as exc:  # the scrape must answer even when the database does not
            log.warning("migrate-cron metrics: cannot read the queue: %s", exc)
            up = GaugeMetricFamily(
                "migrate_cron_up", "1 if the last scrape could read the queue tables."
            )
            up.add_metric([], 0)
            yield up
            return
        yield from self._families(report, time.perf_counter() - started)

    def _families(self, report: StatusReport | None = None, took: float = 0.0) -> Iterator[Metric]:
        win = f"{self.window:g}s"
        up = GaugeMetricFamily(
            "migrate_cron_up", "1 if the last scrape could read the queue tables."
        )
        jobs = GaugeMetricFamily(
            "migrate_cron_jobs",
            "Jobs per kind and state (ready: open and due; scheduled: open, run_at in the future).",
            labels=["kind", "state"],
        )
        done = GaugeMetricFamily(
            "migrate_cron_jobs_done_window",
            f"Jobs done within the last {win} (the metrics window).",
            labels=["kind"],
        )
        age = GaugeMetricFamily(
            "migrate_cron_oldest_ready_age_seconds",
            "How long the oldest ready job of the kind has waited since its work became due "
            "(a cron slot's first try: its slot; a retry: its backoff's end) (0 if none is "
            "ready). Rises when workers fall behind, whatever the depth.",
            labels=["kind"],
        )
        failed = GaugeMetricFamily(
            "migrate_cron_failed_jobs",
            "Permanently failed jobs of the kind (attempts spent). Above zero needs a person.",
            labels=["kind"],
        )
        duration = GaugeMetricFamily(
            "migrate_cron_job_duration_seconds",
            f"Run time of jobs done within the last {win}: quantile 0.5, 0.95 and 1 (max).",
            labels=["kind", "quantile"],
        )
        last_ok = GaugeMetricFamily(
            "migrate_cron_last_success_timestamp_seconds",
            "Unix time the newest successful job of the kind finished.",
            labels=["kind"],
        )
        last_bad = GaugeMetricFamily(
            "migrate_cron_last_failure_timestamp_seconds",
            "Unix time the newest permanently failed job of the kind finished.",
            labels=["kind"],
        )
        lag = GaugeMetricFamily(
            "migrate_cron_schedule_lag_seconds",
            "How late the newest slot of a scheduled job started (or is, if not yet started or "
            "not enqueued).",
            labels=["kind"],
        )
        next_slot = GaugeMetricFamily(
            "migrate_cron_schedule_next_slot_timestamp_seconds",
            "Unix time of the next slot of a scheduled job (needs the registry).",
            labels=["kind"],
        )
        leader = GaugeMetricFamily(
            "migrate_cron_scheduler_leader",
            "1 for the scheduler holding the leader lease (label holder: host:pid); absent when "
            "no scheduler holds it.",
            labels=["holder"],
        )
        lease_left = GaugeMetricFamily(
            "migrate_cron_scheduler_lease_remaining_seconds",
            "Seconds until the scheduler leader's lease expires; negative once expired (the "
            "scheduler stopped renewing it). Absent if no scheduler ever ran.",
        )
        bought = GaugeMetricFamily(
            "migrate_cron_since_switch",
            "Since the kind's switch from cron (needs the registry), what the queue did that cron "
            "could not: what=rescued (jobs that failed, then succeeded on a retry), overlap-held "
            "(starts held back by overlap), missed-run / missed-skipped (slots missed while down: "
            "run late or skipped by the policy), duplicate-fire (slots fired by several hosts, "
            "run once).",
            labels=["kind", "what"],
        )
        took_g = GaugeMetricFamily(
            "migrate_cron_scrape_query_seconds", "Time the status queries took for this scrape."
        )
        if report is not None:
            up.add_metric([], 1)
            took_g.add_metric([], took)
            for k in report.kinds:
                for state in LIVE_COUNTS:
                    jobs.add_metric([k.kind, state], getattr(k, state))
                done.add_metric([k.kind], k.done)
                age.add_metric([k.kind], k.oldest_ready_age or 0.0)
                failed.add_metric([k.kind], k.failed)
                for q, attr in QUANTILES:
                    value = getattr(k, attr)
                    if value is not None:
                        duration.add_metric([k.kind, q], value)
                if k.last_success is not None:
                    last_ok.add_metric([k.kind], k.last_success.timestamp())
                if k.last_failure is not None:
                    last_bad.add_metric([k.kind], k.last_failure.timestamp())
                s = k.schedule
                if s is not None and s.lag is not None:
                    lag.add_metric([s.job], s.lag)
                if s is not None and s.next_slot is not None:
                    next_slot.add_metric([s.job], s.next_slot.timestamp())
            for kind, gains in sorted(report.since_switch.items()):
                for attr, what, _ in FIGURES:
                    bought.add_metric([kind, what], getattr(gains, attr))
            if report.leader is not None:
                holder, remaining = report.leader
                lease_left.add_metric([], remaining)
                if remaining > 0:
                    leader.add_metric([holder], 1)
        yield from (
            up,
            jobs,
            done,
            age,
            failed,
            duration,
            last_ok,
            last_bad,
            lag,
            next_slot,
            leader,
            lease_left,
            bought,
            took_g,
        )


def metrics_registry(
    store: Store, window: float = 3600.0, specs: Sequence[JobSpec] = ()
) -> CollectorRegistry:
    """A registry holding only the queue collector (no process metrics of the exporter)."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(QueueCollector(store, window, specs))
    return registry
