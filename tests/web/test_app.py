"""Every page and every refusal of the dashboard, through Starlette's TestClient, on SQLite,
PostgreSQL and MariaDB (the ``store`` fixture): what a page shows is what the queue holds,
and no refused request changes a row."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest

from migrate_cron.registry import load_registry
from migrate_cron.store import Store
from migrate_cron.store.leases import SCHEDULER_LEASE
from migrate_cron.web.app import WebConfig, create_app
from migrate_cron.web.guard import ActionLog
from tests.web.project import SWITCHED, WORKER, Seeded, project, seed

with warnings.catch_warnings():  # Starlette 1.x would rather have httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

TOKEN = "correct-horse-battery-staple"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return project(tmp_path_factory.mktemp("web-project"))


def app_for(store: Store, registry: Path, *, actions: bool = True) -> tuple[TestClient, ActionLog]:
    log = ActionLog(stream=StringIO())
    config = WebConfig(
        database_url="unused://",
        registry=str(registry),
        allow_actions=actions,
        token=TOKEN if actions else None,
        log=log,
    )
    return TestClient(create_app(config, store=store)), log


@pytest.fixture
def world(store: Store) -> Seeded:
    return seed(store)


@pytest.fixture
def client(store: Store, registry: Path) -> Iterator[tuple[TestClient, ActionLog]]:
    client, log = app_for(store, registry)
    with client:
        yield client, log


def sign_in(client: TestClient, token: str = TOKEN) -> str:
    """Sign in; returns the CSRF token the Failed page's forms carry."""
    response = client.post("/login", data={"token": token, "who": "ann"}, follow_redirects=False)
    assert response.status_code == 303, response.text
    page = client.get("/failed").text
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def cell(html: str, row: str, css: str) -> str:
    found = re.search(rf'<tr data-kind="{row}">.*?class="n {css}">(.*?)</td>', html, re.S)
    assert found, f"{row}/{css} not in the page"
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


# ---------------------------------------------------------------------- pages
def test_overview_counts_what_the_queue_holds(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog]
) -> None:
    store.acquire_lease(SCHEDULER_LEASE, "sched-host:1", 60)
    page = client[0].get("/")
    assert page.status_code == 200
    html = page.text
    assert re.search(r'id="total-ready">2<', html)
    assert re.search(r'id="total-running">1<', html)
    assert re.search(r'id="total-failed">2<', html)
    assert cell(html, "invoices-export", "failed") == "2"
    assert cell(html, "carts-remind-abandoned", "ready") == "2"
    assert cell(html, "orders-push-erp", "running") == "1"
    assert "sched-host:1" in html  # the scheduler leader
    assert "<svg" in html and "run time p50 / p95" in html
    assert client[0].get("/?window=24h").status_code == 200
    assert client[0].get("/?window=soon").status_code == 400
    # Over 24h, once the history is rolled up, the kinds table's p50/p95 say they are read
    # from histograms; the 1h window stays exact.
    assert 'id="approximate"' not in client[0].get("/?window=24h").text
    while store.roll_up_trends(store.db_now() + timedelta(days=1)):
        pass
    day = client[0].get("/?window=24h").text
    assert 'id="approximate"' in day and "≈p50" in day
    assert 'id="approximate"' not in client[0].get("/").text


def test_failed_job_schedules_migration_and_workers_pages(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog], registry: Path
) -> None:
    web = client[0]
    failed = web.get("/failed").text
    assert "2 failed jobs" in failed and "SFTP upload refused (1)" in failed
    assert "upload 2" in failed  # the output's tail
    assert 'type="checkbox"' not in failed  # not signed in: nothing to tick
    only = web.get("/failed?kind=orders-push-erp").text
    assert "0 failed jobs" in only

    job = web.get(f"/jobs/{world.failed[0]}").text
    assert "SFTP upload refused (1)" in job and "2026-12-01" in job  # error, payload
    assert WORKER in job and "1 of 1" in job
    running = web.get(f"/jobs/{world.running}").text
    assert "running" in running and WORKER in running  # the slot's job, on its worker
    assert web.get("/jobs/999999").status_code == 404

    schedules = web.get("/schedules").text
    for name in ("invoices-export", "orders-push-erp", "carts-remind-abandoned"):
        assert f'data-job="{name}"' in schedules
    spec = load_registry(registry).get("invoices-export")
    assert f"<code>{spec.schedule}</code> {spec.timezone}" in schedules
    assert "skip: missed slots are recorded as skipped" in schedules

    migration = web.get("/migration").text
    crontab = (Path(__file__).resolve().parents[2] / "samples" / "shop.crontab").read_text()
    assert "flock -n /tmp/erp-sync.lock" in crontab
    for name, mode in SWITCHED.items():
        row = re.search(rf'<tr data-job="{name}">(.*?)</tr>', migration, re.S)
        assert row and f'class="mode {mode}"' in row.group(1), name
        assert "switched" in row.group(1)
    assert 'class="mode cron">cron<' in migration
    assert "php artisan carts:remind-abandoned --chunk=500" in migration

    workers = web.get("/workers").text
    assert WORKER in workers and 'data-state="alive"' in workers
    assert "none holds the lease" in workers
    assert web.get("/login").status_code == 200
    assert web.get("/healthz").text == "ok\n"
    css = web.get("/static/style.css")
    assert css.status_code == 200 and "@media" in css.text


def test_every_response_forbids_framing_and_foreign_scripts(
    client: tuple[TestClient, ActionLog],
) -> None:
    headers = client[0].get("/").headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    assert "cdn" not in client[0].get("/").text.lower()  # every asset is ours


# ---------------------------------------------------------------------- actions
def test_retry_and_cancel_from_the_failed_page(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog]
) -> None:
    web, log = client
    csrf = sign_in(web)
    first, second = world.failed
    done = web.post("/actions/retry", data={"csrf": csrf, "id": [str(first)], "back": "/failed"})
    assert done.status_code == 200 and "retried 1 job" in done.text
    job = store.get(first)
    assert job is not None and job.state == "open" and job.attempts == 0
    cancelled = web.post(
        "/actions/cancel",
        data={"csrf": csrf, "id": [str(second), str(world.ready[0])], "back": f"/jobs/{second}"},
        follow_redirects=False,
    )
    assert cancelled.headers["location"] == f"/jobs/{second}?cancelled=2"
    assert {store.get(i).state for i in (second, world.ready[0])} == {"cancelled"}  # type: ignore[union-attr]
    assert (
        web.post("/actions/retry", data={"csrf": csrf, "kind": "invoices-export"}).status_code
        == 200
    )
    lines = list(log.lines)
    assert any("web.retry who=ann" in line and f"ids={first}" in line for line in lines)
    assert any("web.cancel" in line and "changed=2" in line for line in lines)


def test_signing_out_ends_the_session(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog]
) -> None:
    web, log = client
    csrf = sign_in(web)
    kept = web.cookies.get("mc_session")  # a copy kept from before (another tab, a proxy log)
    assert kept
    assert "sign out ann" in web.get("/").text
    assert web.get("/logout").status_code == 405
    out = web.post("/logout", follow_redirects=False)
    assert out.status_code == 303 and "mc_session=" in out.headers["set-cookie"]
    assert "sign in to act" in web.get("/").text
    refused = web.post("/actions/retry", data={"csrf": csrf, "id": [str(world.failed[0])]})
    assert refused.status_code == 401
    # The server forgot the session too: the old cookie sent again is refused, not only deleted.
    web.cookies.set("mc_session", kept)
    assert "sign in to act" in web.get("/").text
    replayed = web.post("/actions/retry", data={"csrf": csrf, "id": [str(world.failed[0])]})
    assert replayed.status_code == 401
    assert store.get(world.failed[0]).state == "failed"  # type: ignore[union-attr]
    assert any("web.sign-out who=ann" in line for line in log.lines)


def test_retry_every_failed_job_of_a_kind(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog]
) -> None:
    web, log = client
    csrf = sign_in(web)
    web.post("/actions/retry", data={"csrf": csrf, "kind": "invoices-export"})
    assert {store.get(i).state for i in world.failed} == {"open"}  # type: ignore[union-attr]
    assert any("kind=invoices-export changed=2" in line for line in log.lines)


# ---------------------------------------------------------------------- refusals
def states(store: Store, world: Seeded) -> list[str]:
    ids = [*world.ready, world.running, *world.failed]
    return [store.get(i).state for i in ids]  # type: ignore[union-attr]


def test_refusals_change_nothing(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog], registry: Path
) -> None:
    web, log = client
    before = states(store, world)
    target = {"id": [str(world.failed[0])]}
    # GET on an action: the router says 405
    assert web.get(f"/actions/retry?id={world.failed[0]}").status_code == 405
    assert web.get("/actions/cancel").status_code == 405
    # no token: not signed in
    assert web.post("/actions/retry", data=target).status_code == 401
    assert web.post("/actions/cancel", data=target).status_code == 401
    # wrong token: refused, no cookie
    wrong = web.post("/login", data={"token": TOKEN + "x"}, follow_redirects=False)
    assert wrong.status_code == 403 and "set-cookie" not in wrong.headers
    assert web.post("/login", data={}).status_code == 403
    assert web.post("/actions/retry", data=target).status_code == 401
    # a forged cookie
    web.cookies.set("mc_session", "abc.YW5u.1.forged")
    assert web.post("/actions/retry", data=target).status_code == 401
    web.cookies.clear()
    # signed in, but no or a wrong CSRF token
    csrf = sign_in(web)
    assert web.post("/actions/retry", data=target).status_code == 403
    assert web.post("/actions/retry", data={**target, "csrf": csrf[:-2] + "xx"}).status_code == 403
    # another site's form, even with the right token
    other = web.post(
        "/actions/retry", data={**target, "csrf": csrf}, headers={"origin": "https://evil.example"}
    )
    assert other.status_code == 403
    # ids are integers, and nothing else is read from the form
    assert web.post("/actions/retry", data={"id": ["1; rm -rf /"], "csrf": csrf}).status_code == 400
    assert web.post("/actions/cancel", data={"csrf": csrf}).status_code == 400
    assert states(store, world) == before
    assert sum("web.refused" in line for line in log.lines) >= 6

    # read-only: no sign-in, no action, whatever is sent
    read_only, _ = app_for(store, registry, actions=False)
    with read_only:
        assert read_only.post("/login", data={"token": TOKEN}).status_code == 403
        assert read_only.post("/actions/retry", data={**target, "csrf": csrf}).status_code == 403
        assert read_only.post("/actions/cancel", data=target).status_code == 403
        assert "read-only" in read_only.get("/failed").text
    assert states(store, world) == before


def test_an_old_session_is_refused() -> None:
    from migrate_cron.web.guard import Guard, Refused

    clock = [1_000_000.0]
    guard = Guard(True, TOKEN, clock=lambda: clock[0])
    cookie = guard.sign_in(TOKEN, "ann")
    session = guard.session(cookie)
    assert session is not None and session.who == "ann"
    assert guard.authorise(session, guard.csrf(session)) == session
    clock[0] += 13 * 3600
    assert guard.session(cookie) is None
    assert Guard(True, TOKEN).session(cookie) is None  # another process's secret
    with pytest.raises(Refused):
        Guard(True, TOKEN).sign_in("", "ann")


# ---------------------------------------------------------------------- database errors
def test_a_database_error_is_a_page_without_the_password(registry: Path) -> None:
    from migrate_cron.store import open_store

    url = "postgresql+psycopg://app:s3cret@127.0.0.1:1/nope"
    store = open_store(url)
    config = WebConfig(database_url=url, registry=str(registry))
    with TestClient(create_app(config, store=store)) as web:
        page = web.get("/")
    assert page.status_code == 503
    assert "s3cret" not in page.text and "cannot use the database" in page.text


def test_the_password_never_shows(pg_database: str, registry: Path) -> None:
    from sqlalchemy.engine import make_url

    from migrate_cron.store import open_store

    url = make_url(pg_database).set(password="s3cret-pw").render_as_string(hide_password=False)
    store = open_store(url, prefix="webpw_")
    store.create_schema()
    try:
        config = WebConfig(database_url=url, table_prefix="webpw_", registry=str(registry))
        job_id = store.enqueue("invoices-export", {"day": "2026-12-01"}).job_id
        pages = ("/", "/?window=24h", "/failed", "/jobs", "/jobs?q=s3cret", f"/jobs/{job_id}",
                 "/kinds/invoices-export", "/schedules", "/migration", "/workers")  # fmt: skip
        with TestClient(create_app(config, store=store)) as web:
            for path in pages:
                page = web.get(path)
                assert page.status_code == 200, path
                assert "s3cret-pw" not in page.text, path
            assert "127.0.0.1" in web.get("/").text
    finally:
        store.drop_schema()
        store.dispose()
