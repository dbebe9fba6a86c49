"""The console's actions on a kind (run now, pause, resume, retry every failed job with a
confirmed count), the kind page, the action log on the job and kind pages, and the Workers
page's alive / stopped / gone — through Starlette's TestClient on SQLite, PostgreSQL and
MariaDB. Every action refused without a session, without the CSRF token, from another site
or on a read-only console changes no row and records nothing."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from migrate_cron.clock import FakeClock
from migrate_cron.registry import load_registry
from migrate_cron.store import Store, open_store
from migrate_cron.store.workers import WorkerInfo
from migrate_cron.vocabulary import Action, JobState
from tests.web.project import WORKER, Seeded
from tests.web.test_app import TOKEN, ActionLog, TestClient, app_for, sign_in
from tests.web.test_app import client as client  # the fixtures
from tests.web.test_app import registry as registry
from tests.web.test_app import world as world

KIND = "invoices-export"


def test_the_kind_page(store: Store, world: Seeded, client: tuple[TestClient, ActionLog]) -> None:
    web = client[0]
    page = web.get(f"/kinds/{KIND}")
    assert page.status_code == 200
    assert re.search(r'id="count-failed">2<', page.text)
    assert f'href="/jobs?kind={KIND}"' in page.text
    assert "Sign in" in page.text and 'id="run-now"' not in page.text
    for job_id in world.failed:
        assert f'data-job="{job_id}"' in page.text
    sign_in(web)
    acting = web.get(f"/kinds/{KIND}").text
    assert 'id="run-now"' in acting and 'id="pause"' in acting
    assert f'href="/kinds/{KIND}/retry-failed"' in acting
    assert web.get("/kinds/no-such-kind").status_code == 404


def test_run_now_pause_and_resume(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog], registry: Path
) -> None:
    web, log = client
    csrf = sign_in(web)
    ran = web.post("/actions/run-now", data={"csrf": csrf, "kind": KIND}, follow_redirects=False)
    assert ran.status_code == 303
    found = re.fullmatch(rf"/kinds/{KIND}\?started=(\d+)", ran.headers["location"])
    assert found, ran.headers["location"]
    job = store.get(int(found.group(1)))
    spec = load_registry(registry).get(KIND)
    assert job is not None and (job.kind, job.state, job.payload) == (KIND, JobState.OPEN, None)
    assert job.max_attempts == spec.max_attempts
    assert f"started job {job.id}" in web.get(ran.headers["location"]).text

    paused = web.post("/actions/pause", data={"csrf": csrf, "kind": KIND})
    assert paused.status_code == 200
    assert 'id="paused"' in paused.text and 'id="resume"' in paused.text
    assert "ann from the console (testclient)" in store.paused()[KIND]
    again = web.post("/actions/pause", data={"csrf": csrf, "kind": KIND})
    assert "it was already paused" in again.text
    resumed = web.post("/actions/resume", data={"csrf": csrf, "kind": KIND})
    assert resumed.status_code == 200 and KIND not in store.paused()

    rows = store.actions_for_kind(KIND)
    assert [(r.action, r.changed) for r in rows] == [
        (Action.RESUME, 1), (Action.PAUSE, 0), (Action.PAUSE, 1), (Action.RUN_NOW, 1),
    ]  # fmt: skip
    assert {(r.who, r.origin) for r in rows} == {("ann", "testclient")}
    assert resumed.text.count('class="action"') == 4  # the kind page lists them
    assert any("web.run-now who=ann" in line and f"job={job.id}" in line for line in log.lines)
    assert any("web.paused" in line and "changed=1" in line for line in log.lines)


def test_the_job_page_shows_the_actions_on_the_job(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog]
) -> None:
    web = client[0]
    first = world.failed[0]
    assert "no action recorded on this job" in web.get(f"/jobs/{first}").text
    csrf = sign_in(web)
    web.post("/actions/retry", data={"csrf": csrf, "id": [str(first)], "back": f"/jobs/{first}"})
    web.post("/actions/cancel", data={"csrf": csrf, "id": [str(first)], "back": f"/kinds/{KIND}"})
    page = web.get(f"/jobs/{first}").text
    assert re.findall(r'class="action" data-action="([^"]+)"', page) == ["cancel", "retry"]
    assert "testclient" in page


def test_retry_every_failed_job_of_a_kind_with_a_confirmed_count(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog]
) -> None:
    web, log = client
    csrf = sign_in(web)
    confirm = web.get(f"/kinds/{KIND}/retry-failed").text
    assert re.search(r'id="retry-count">2<', confirm) and 'name="seen" value="2"' in confirm
    # one more failed since the page was read: nothing retried, the new number to confirm
    extra = store.enqueue(KIND, max_attempts=1).job_id
    store.claim(WORKER, 1, lease=60, kinds=[KIND])
    store.fail(WORKER, extra, "boom")
    stale = web.post("/actions/retry-failed", data={"csrf": csrf, "kind": KIND, "seen": "2"})
    assert stale.status_code == 409 and 'id="count-changed"' in stale.text
    assert 'name="seen" value="3"' in stale.text
    assert store.count_jobs(kind=KIND, states=(JobState.FAILED,)) == 3
    assert store.actions_for_kind(KIND) == []
    done = web.post(
        "/actions/retry-failed", data={"csrf": csrf, "kind": KIND, "seen": "3"},
        follow_redirects=False,
    )  # fmt: skip
    assert done.headers["location"] == f"/kinds/{KIND}?retried=3"
    assert store.count_jobs(kind=KIND, states=(JobState.FAILED,)) == 0
    [row] = store.actions_for_kind(KIND)
    assert (row.action, row.changed, row.job_id) == (Action.RETRY_FAILED, 3, None)
    assert any("web.retry-failed" in line and "seen=3 changed=3" in line for line in log.lines)
    assert "No failed job" in web.get(f"/kinds/{KIND}/retry-failed").text
    assert web.post("/actions/retry-failed", data={"csrf": csrf, "kind": KIND}).status_code == 400


def test_every_new_action_is_refused_without_the_guard(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog], registry: Path
) -> None:
    web, log = client
    forms = {
        "/actions/run-now": {"kind": KIND},
        "/actions/pause": {"kind": KIND},
        "/actions/resume": {"kind": KIND},
        "/actions/retry-failed": {"kind": KIND, "seen": "2"},
    }
    jobs_before = store.count_jobs()
    for path, form in forms.items():
        assert web.get(path).status_code == 405
        assert web.post(path, data=form).status_code == 401, path  # not signed in
    csrf = sign_in(web)
    for path, form in forms.items():
        assert web.post(path, data=form).status_code == 403, path  # no CSRF token
        foreign = web.post(
            path, data={**form, "csrf": csrf}, headers={"origin": "https://evil.example"}
        )
        assert foreign.status_code == 403, path
    for bad in ("", "@scheduler", "a/b", "x" * 201):
        assert web.post("/actions/pause", data={"csrf": csrf, "kind": bad}).status_code == 400
    unknown = web.post("/actions/run-now", data={"csrf": csrf, "kind": "not-in-registry"})
    assert unknown.status_code == 404
    read_only, _ = app_for(store, registry, actions=False)
    with read_only:
        for path, form in forms.items():
            assert read_only.post(path, data={**form, "csrf": csrf}).status_code == 403, path
        page = read_only.get(f"/kinds/{KIND}").text
        assert "read-only" in page and "<form" not in page.split("<main", 1)[1]
        assert "read-only" in read_only.get(f"/kinds/{KIND}/retry-failed").text
    assert store.count_jobs() == jobs_before
    assert store.paused() == {}
    assert store.count_jobs(kind=KIND, states=(JobState.FAILED,)) == 2
    assert store.actions_for_kind(KIND) == []
    assert sum("web.refused" in line for line in log.lines) >= 12


def test_the_workers_page_tells_alive_stopped_and_gone(
    store: Store, world: Seeded, client: tuple[TestClient, ActionLog], db_url: str,
    table_prefix: str,
) -> None:  # fmt: skip
    def info(name: str, run_as: str = "app") -> WorkerInfo:
        return WorkerInfo(name, f"host-{name}", run_as, ("a", "b") if run_as != "root" else None,
                          100, 2)  # fmt: skip

    store.worker_started(info("idle", "root"))
    store.worker_started(info("left"))
    store.worker_stopped("left")
    earlier = FakeClock(store.db_now() - timedelta(minutes=5))
    past = open_store(db_url, prefix=table_prefix, clock=earlier)
    try:
        past.worker_started(info("killed"))
    finally:
        past.dispose()
    page = client[0].get("/workers").text
    states = {name: state for state, name in re.findall(
        r'<tr class="worker" data-state="(\w+)" data-worker="([^"]+)"', page)}  # fmt: skip
    assert states == {"idle": "alive", "left": "stopped", "killed": "gone", WORKER: "alive"}
    assert "can run as any user" in page and "host-idle" in page
    assert re.search(r'id="workers-alive">2<', page) and re.search(r'id="workers-gone">1<', page)
    assert TOKEN not in page


def test_the_console_on_a_database_at_step_4(
    store: Store, world: Seeded, registry: Path, db_url: str, table_prefix: str
) -> None:
    """Before ``db upgrade`` to step 5: the pages show what the queue holds, workers only
    from their running jobs, and the actions act without a record."""
    for table in (store.tables.workers, store.tables.actions, store.tables.tallies):
        table.drop(store.engine)
    old = open_store(db_url, prefix=table_prefix)
    try:
        web, _ = app_for(old, registry)
        with web:
            page = web.get("/workers").text
            assert "keeps no worker rows yet" in page and f'data-worker="{WORKER}"' in page
            assert web.get(f"/jobs/{world.failed[0]}").status_code == 200
            csrf = sign_in(web)
            paused = web.post("/actions/pause", data={"csrf": csrf, "kind": KIND})
            assert paused.status_code == 200 and "no action recorded on this kind" in paused.text
            assert KIND in old.paused()
    finally:
        old.dispose()
        store.create_schema()  # for the fixture's drop
