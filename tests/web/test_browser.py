"""The console in a real browser: Debian's chromium driven by Playwright, against the
installed ``migrate-cron web`` on SQLite, PostgreSQL and MariaDB, with jobs in every state run
by real workers (``console_world.py``): the failure burst on the trend chart, a search by a
word of an output, a running job's output so far, a worker killed mid-run shown as gone, and
every action of an incident, each recorded.

Never downloads a browser (``executable_path`` points at the system's). Without chromium the
test is skipped outside CI; with ``CI=true`` it fails (``.ci/run`` installs chromium). The
screenshots it takes go to the test's temporary directory: a test never rewrites a tracked
file. ``make screenshots`` (``MIGRATE_CRON_SCREENSHOTS=docs/img``) writes them where the README
shows them (from the PostgreSQL run: the other databases' pages look the same).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.store import Store
from migrate_cron.vocabulary import Action, JobState, WorkerState
from tests.conftest import IN_CI
from tests.web.console_world import (
    BURST_WORD,
    HALFWAY,
    add_jobs,
    base_env,
    run_worker_once,
    start_worker,
    stop,
    web_server,
)
from tests.web.project import SWITCHED, WORKER, Seeded, project, seed

CHROMIUM = Path("/usr/bin/chromium")
#: Where the screenshots go when asked for (``make screenshots``); else a temporary directory.
SCREENSHOTS_ENV = "MIGRATE_CRON_SCREENSHOTS"
TOKEN = "browser-test-token-0123456789"
BURST = 5

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
        if IN_CI:
            pytest.fail(f"CI requires the browser: {reason}", pytrace=False)
        pytest.skip(reason)
    return CHROMIUM


def wait_for(check: Any, what: str, timeout: float = 30.0) -> Any:
    """Poll ``check`` until it returns something true; fail saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:.0f}s"
        time.sleep(0.2)


def test_the_console_in_chromium(
    chromium: Path, store: Store, db_url: str, table_prefix: str, backend: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    registry = project(tmp_path)
    add_jobs(registry)
    env = base_env(db_url, table_prefix)
    world: Seeded = seed(store)
    asked = os.environ.get(SCREENSHOTS_ENV)
    images = Path(asked) if asked and backend == "postgresql" else tmp_path / "img"
    images.mkdir(parents=True, exist_ok=True)

    # The failure burst: five jobs whose command prints a word and exits 3, run by a worker.
    burst = [store.enqueue("burst-fail", max_attempts=1).job_id for _ in range(BURST)]
    run_worker_once(env, registry, tmp_path, "burst-fail")
    assert {store.get(i).state for i in burst} == {JobState.FAILED}  # type: ignore[union-attr]

    with web_server(env, registry, tmp_path, TOKEN) as (base, log), sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(chromium), args=["--no-sandbox"], timeout=60_000
        )
        worker = None
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            page.set_default_timeout(20_000)

            # Overview: the counts of the queue, and the burst on the trend chart
            page.goto(f"{base}/")
            assert page.text_content("#total-ready") == "2"
            assert page.text_content("#total-failed") == str(2 + BURST)
            failed_cell = page.locator('tr[data-kind="invoices-export"] td.failed')
            assert failed_cell.inner_text().strip() == "2"
            check_burst_on_chart(page)
            page.screenshot(path=str(images / "overview.png"), full_page=True)

            # It refreshes in place: a new job shows without a navigation
            page.evaluate("window.notReloaded = true")
            store.enqueue("carts-remind-abandoned", {"chunk": 3})
            expect(page.locator("#total-ready")).to_have_text("3", timeout=15_000)
            assert page.evaluate("window.notReloaded") is True

            # Jobs: a search by a word of the output finds the burst, and only it
            page.goto(f"{base}/jobs")
            page.fill("#jobs-search", BURST_WORD)
            page.click("#jobs-apply")
            page.wait_for_url(f"**q={BURST_WORD}**")
            rows = page.locator("tr.job-row").all()
            found = {int(r.get_attribute("data-job") or 0) for r in rows}
            assert found == set(burst)
            page.screenshot(path=str(images / "jobs.png"), full_page=True)

            # A running job: its output so far, refreshing; its worker alive on Workers
            slow = store.enqueue("slow-print", max_attempts=1).job_id
            worker = start_worker(env, registry, tmp_path, "slow-print")
            wait_for(lambda: store.get(slow).state == JobState.RUNNING, "the claim")  # type: ignore[union-attr]
            page.goto(f"{base}/jobs/{slow}")
            expect(page.locator("#output-so-far")).to_contain_text(HALFWAY, timeout=20_000)
            assert page.locator("#job-elapsed").inner_text().strip()
            page.screenshot(path=str(images / "job-running.png"), full_page=True)
            page.goto(f"{base}/workers")
            ours = f'tr.worker:not([data-worker="{WORKER}"])'  # the seed's holds a job
            expect(page.locator(f'{ours}[data-state="{WorkerState.ALIVE}"]')).to_have_count(1)

            # Killed mid-run: the worker shows as gone once three heartbeats are missed
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
            gone = page.locator(f'{ours}[data-state="{WorkerState.GONE}"]')
            expect(gone).to_have_count(1, timeout=30_000)
            page.screenshot(path=str(images / "workers.png"), full_page=True)

            # Sign in; Failed: tick one job, retry it
            page.goto(f"{base}/login")
            page.fill('input[name="token"]', TOKEN)
            page.fill('input[name="who"]', "browser-test")
            page.click("form.stack button")
            page.wait_for_url(f"{base}/failed")
            target = world.failed[0]
            page.check(f'tr[data-job="{target}"] input[type="checkbox"]')
            page.screenshot(path=str(images / "failed.png"), full_page=True)
            page.click("#retry-selected")
            page.wait_for_selector("#done")  # (a ticked box holds the refresh back)
            assert page.text_content("#done") == "retried 1 job"
            job = store.get(target)
            assert job is not None and job.state == "open" and job.attempts == 0
            other = store.get(world.failed[1])
            assert other is not None and other.state == "failed"
            assert "web.retry who=browser-test" in log.read_text()
            page.goto(f"{base}/jobs/{target}")
            expect(page.locator(f'tr.action[data-action="{Action.RETRY}"]')).to_have_count(1)

            # A kind page: pause, resume, run now, retry all failed (with its count), recorded
            page.goto(f"{base}/kinds/burst-fail")
            page.click("#pause")
            expect(page.locator("#paused")).to_have_count(1)
            assert "burst-fail" in store.paused()
            page.click("#resume")
            expect(page.locator("#paused")).to_have_count(0)
            assert "burst-fail" not in store.paused()
            page.click("#run-now")
            page.wait_for_selector("#done")
            assert store.count_jobs(kind="burst-fail", states=(JobState.OPEN,)) == 1
            page.click("#retry-failed")
            assert page.text_content("#retry-count") == str(BURST)
            page.click("#confirm")
            page.wait_for_selector("#done")
            assert store.count_jobs(kind="burst-fail", states=(JobState.FAILED,)) == 0
            assert store.count_jobs(kind="burst-fail", states=(JobState.OPEN,)) == BURST + 1
            for action in (Action.PAUSE, Action.RESUME, Action.RUN_NOW, Action.RETRY_FAILED):
                recorded = page.locator(f'tr.action[data-action="{action}"]')
                expect(recorded).to_have_count(1)
                assert "browser-test" in recorded.inner_text()
            page.screenshot(path=str(images / "kind.png"), full_page=True)

            # Migration: every line of the sample crontab, with its mode
            page.goto(f"{base}/migration")
            rows = page.locator("#migration tbody tr")
            assert rows.count() == 8 + 2  # the sample's lines and the test's two jobs
            for name, mode in SWITCHED.items():
                assert page.locator(f'tr[data-job="{name}"] .mode').inner_text() == mode
            assert page.locator('tr[data-job="carts-remind-abandoned"] .mode').inner_text() == (
                "cron"
            )
            text = page.locator("#migration").inner_text()
            assert "php artisan carts:remind-abandoned --chunk=500" in text
            assert "shop.crontab:15" in text
            page.screenshot(path=str(images / "migration.png"), full_page=True)

            # Phone width: nothing wider than the screen
            phone = browser.new_page(viewport={"width": 390, "height": 800})
            for path in ("/", "/failed", "/jobs", "/migration", "/schedules", "/workers",
                         "/kinds/burst-fail", f"/jobs/{slow}"):  # fmt: skip
                phone.goto(f"{base}{path}")
                width = phone.evaluate("document.documentElement.scrollWidth")
                assert width <= 390, f"{path} is {width}px wide at phone width"
        finally:
            browser.close()
            if worker is not None:
                stop(worker, signal.SIGKILL)


def check_burst_on_chart(page: Any) -> None:
    """The done/failed trend has a point holding the burst's failures."""
    points = page.locator('#trend-throughput [data-series="failed"]')
    values = [float(p.get_attribute("data-v") or 0) for p in points.all()]
    assert values and max(values) >= BURST, values
