"""A worker's own metrics (``worker --metrics-port``), scraped over HTTP from the installed
command and parsed with prometheus-client's parser."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from migrate_cron.store import Store
from tests.worker.helpers import free_port, spawn_cli_worker, stop_process, wait_for

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_runs_are_counted_by_kind_and_outcome_with_their_own_run_time(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store
) -> None:
    (tmp_path / "migrate-cron.toml").write_text(
        '[jobs.nap]\ncommand = "sleep 0.3"\n\n[jobs.broken]\ncommand = "exit 3"\n'
    )
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(tmp_path / "migrate-cron.toml"),
    }
    naps = [store.enqueue("nap").job_id for _ in range(2)]
    broken = store.enqueue("broken", None, max_attempts=1).job_id
    port = free_port()
    started = time.time()
    proc, log = spawn_cli_worker(
        "--poll", "0.2", "--metrics-port", str(port), cwd=tmp_path, env=env
    )
    try:

        def counted() -> Samples | None:
            got = scrape(port)
            done = ("migrate_cron_runs_total", (("kind", "nap"), ("outcome", "done")))
            return got if got and got.get(done) == 2 else None

        samples = wait_for(counted, 60, what="two nap runs counted")
        wait_for(lambda: store.get(broken).state == "failed", 30, what="the broken job failed")
        # A run is counted when it ends, its outcome written a moment later (the finisher
        # batches): the worker is SIGKILLed below, so wait for the writes first.
        wait_for(
            lambda: all(store.get(i).state == "done" for i in naps), 30, what="the naps written"
        )
        samples = wait_for(lambda: scrape(port), 10, what="a scrape")
    finally:
        stop_process(proc)
    assert [store.get(i).state for i in naps] == ["done", "done"], log.read_text()
    assert samples[("migrate_cron_runs_total", (("kind", "broken"), ("outcome", "failed")))] == 1
    # The run itself: the histogram holds exactly the durations the runs recorded in their
    # history (the worker measures each run once, from its start to its end — not its wait in
    # the queue nor the write of its outcome): 0.3 s sleeps, never under 0.1 s.
    runs = [a for i in naps for a in store.attempts(i)]
    assert len(runs) == 2, runs
    took = [(a.finished_at - a.started_at).total_seconds() for a in runs]
    assert all(t >= 0.3 for t in took), took
    hist = "migrate_cron_run_duration_seconds_bucket"
    for le in ("0.1", "0.5", "1.0", "+Inf"):
        within = sum(1 for t in took if le == "+Inf" or t <= float(le))
        assert samples[(hist, (("kind", "nap"), ("le", le)))] == within, (le, took)
    assert samples[("migrate_cron_run_duration_seconds_count", (("kind", "nap"),))] == 2
    total = samples[("migrate_cron_run_duration_seconds_sum", (("kind", "nap"),))]
    assert abs(total - sum(took)) < 0.001, (total, took)  # the history keeps microseconds
    contact = samples[("migrate_cron_worker_last_contact_timestamp_seconds", ())]
    assert started <= contact <= time.time()
    assert samples[("migrate_cron_worker_running_jobs", ())] == 0
    assert started - 1 <= samples[("migrate_cron_worker_start_timestamp_seconds", ())]
