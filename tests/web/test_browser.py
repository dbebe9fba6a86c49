"""The dashboard in a real browser: Debian's chromium driven by Playwright, against the
installed ``migrate-cron web`` on PostgreSQL with failed, running and scheduled jobs.

Never downloads a browser (``executable_path`` points at the system's). Without chromium the
test is skipped outside CI; with ``CI=true`` it fails (``.ci/run`` installs chromium). The
screenshots it takes go to the test's temporary directory: a test never rewrites a tracked
file. ``make screenshots`` (``MIGRATE_CRON_SCREENSHOTS=docs/img``) writes them where the README
shows them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.store import Store
from tests.conftest import IN_CI, cli_path
from tests.web.project import SWITCHED, Seeded, project, seed

CHROMIUM = Path("/usr/bin/chromium")
#: Where the screenshots go when asked for (``make screenshots``); else a temporary directory.
SCREENSHOTS_ENV = "MIGRATE_CRON_SCREENSHOTS"
TOKEN = "browser-test-token-0123456789"
START_TIMEOUT = 30.0

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
        if IN_CI:
            pytest.fail(f"CI requires the browser: {reason}", pytrace=False)
        pytest.skip(reason)
    return CHROMIUM


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(
    pg_store: Store, pg_database: str, table_prefix: str, tmp_path: Path
) -> Iterator[tuple[str, Path]]:
    """``migrate-cron web --allow-actions`` on a free port; stopped (and killed if it must
    be) at the end."""
    registry = project(tmp_path)
    port = free_port()
    env = {
        **os.environ,
        "MIGRATE_CRON_DATABASE_URL": pg_database,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_WEB_TOKEN": TOKEN,
    }
    env.pop("MIGRATE_CRON_DEBUG", None)
    log = (tmp_path / "web.log").open("w")
    proc = subprocess.Popen(
        [cli_path(), "web", "--port", str(port), "--allow-actions", "--registry", str(registry),
         "--refresh", "1"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert proc.poll() is None, (tmp_path / "web.log").read_text()
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not answer in time"
            time.sleep(0.1)
        yield base, tmp_path / "web.log"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def test_the_dashboard_in_chromium(
    chromium: Path, server: tuple[str, Path], pg_store: Store, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, log = server
    world: Seeded = seed(pg_store)
    images = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path / "img")
    images.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(chromium), args=["--no-sandbox"], timeout=60_000
        )
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            page.set_default_timeout(20_000)

            # Overview: the counts of the queue
            page.goto(f"{base}/")
            assert page.text_content("#total-ready") == "2"
            assert page.text_content("#total-running") == "1"
            assert page.text_content("#total-failed") == "2"
            failed_cell = page.locator('tr[data-kind="invoices-export"] td.failed')
            assert failed_cell.inner_text().strip() == "2"
            page.screenshot(path=str(images / "overview.png"), full_page=True)

            # It refreshes in place: a new job shows without a navigation
            page.evaluate("window.notReloaded = true")
            pg_store.enqueue("carts-remind-abandoned", {"chunk": 3})
            expect(page.locator("#total-ready")).to_have_text("3", timeout=15_000)
            assert page.evaluate("window.notReloaded") is True

            # Failed: sign in, tick one job, retry it
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
            job = pg_store.get(target)
            assert job is not None and job.state == "open" and job.attempts == 0
            other = pg_store.get(world.failed[1])
            assert other is not None and other.state == "failed"
            assert "web.retry who=browser-test" in log.read_text()

            # Migration: every line of the sample crontab, with its mode
            page.goto(f"{base}/migration")
            rows = page.locator("#migration tbody tr")
            assert rows.count() == 8
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
            for path in ("/", "/failed", "/migration", "/schedules", "/workers"):
                phone.goto(f"{base}{path}")
                width = phone.evaluate("document.documentElement.scrollWidth")
                assert width <= 390, f"{path} is {width}px wide at phone width"
        finally:
            browser.close()
