"""What one worker process counts, served on ``migrate-cron worker --metrics-port``.

The ``metrics`` command reads the queue tables, so its numbers survive restarts and agree
between scrapers; but a table cannot say how many runs failed in the last hour once ``cleanup``
has removed the rows, nor whether an idle worker is still alive. Those are process facts:
monotonic ``_total`` counters (Prometheus' ``rate()`` handles a restart's reset) and liveness
gauges. Durations here are the run itself (command start to exit), not claim to outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Run-time buckets in seconds: sub-second handlers up to hour-long batch scripts.
RUN_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0)


class WorkerMetrics:
    """Counters and gauges of one worker, registered on ``registry`` (none is global)."""

    def __init__(self, registry: CollectorRegistry, running: Callable[[], int]) -> None:
        self._runs = Counter(
            "migrate_cron_runs",
            "Runs finished by this worker, per kind and outcome (done, failed: a retry follows "
            "unless attempts are spent).",
            ["kind", "outcome"],
            registry=registry,
        )
        self._duration = Histogram(
            "migrate_cron_run_duration_seconds",
            "Run time of each run, from the command's start to its exit.",
            ["kind"],
            buckets=RUN_BUCKETS,
            registry=registry,
        )
        self._running = Gauge(
            "migrate_cron_worker_running_jobs",
            "Jobs this worker is running now.",
            registry=registry,
        )
        self._running.set_function(lambda: float(running()))
        self._contact = Gauge(
            "migrate_cron_worker_last_contact_timestamp_seconds",
            "Unix time this worker last reached the queue (claim, heartbeat or reap). A value "
            "falling behind time() means a stuck worker or a database it cannot reach.",
            registry=registry,
        )
        self._started = Gauge(
            "migrate_cron_worker_start_timestamp_seconds",
            "Unix time this worker started.",
            registry=registry,
        )
        self._started.set(time.time())
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}

    def finished(self, kind: str, status: str, seconds: float) -> None:
        # The labelled children, looked up once per (kind, outcome): ``labels()`` takes a
        # lock and checks its arguments on every call, once per job.
        pair = self._children.get((kind, status))
        if pair is None:
            pair = (self._runs.labels(kind, status), self._duration.labels(kind))
            self._children[(kind, status)] = pair
        pair[0].inc()
        pair[1].observe(seconds)

    def contact(self) -> None:
        self._contact.set(time.time())
