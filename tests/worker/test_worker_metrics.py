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
        samples = wait_for(lambda: scrape(port), 10, what="a scrape")
    finally:
        stop_process(proc)
    assert [store.get(i).state for i in naps] == ["done", "done"], log.read_text()
    assert samples[("migrate_cron_runs_total", (("kind", "broken"), ("outcome", "failed")))] == 1
    # The run itself: 0.3 s sleeps are never under 0.1 s; how far above depends on the
    # machine's load, so only a loose upper bound (a run is not counted twice).
    hist = "migrate_cron_run_duration_seconds_bucket"
    assert samples[(hist, (("kind", "nap"), ("le", "0.1")))] == 0
    assert samples[(hist, (("kind", "nap"), ("le", "+Inf")))] == 2
    assert samples[("migrate_cron_run_duration_seconds_count", (("kind", "nap"),))] == 2
    assert 0.6 <= samples[("migrate_cron_run_duration_seconds_sum", (("kind", "nap"),))] < 10
    contact = samples[("migrate_cron_worker_last_contact_timestamp_seconds", ())]
    assert started <= contact <= time.time()
    assert samples[("migrate_cron_worker_running_jobs", ())] == 0
    assert started - 1 <= samples[("migrate_cron_worker_start_timestamp_seconds", ())]
