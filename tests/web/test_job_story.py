"""The Jobs list and a job's story, read through the page read models (no HTTP) and through
the app, on every backend: runs numbered as they happened, the run in progress with its
output so far, the retry a job waits for, and a command shown without a secret."""

from __future__ import annotations

import re
import warnings
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest

from migrate_cron.ops.job_search import JobQuery
from migrate_cron.registry import load_registry
from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun
from migrate_cron.web import pages
from migrate_cron.web.app import WebConfig, create_app
from migrate_cron.web.guard import ActionLog
from migrate_cron.web.job_list import JOBS_PAGE, jobs
from migrate_cron.web.job_story import masked, numbered

with warnings.catch_warnings():  # Starlette 1.x would rather have httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

W = "story-host:77"
REGISTRY = """
[jobs.export]
command = "PGPASSWORD=hunter2 pg_dump 'postgresql://app:s3cret@db/app' | gzip > out.gz"
cwd = "/srv/export"
env = { API_TOKEN = "tok-value-xyz", LANG = "C.UTF-8" }
max_attempts = 3
backoff = { base = 10, cap = 600 }
timeout = 900

[jobs.mailer]
command = "send-mail --queue outgoing"
"""


@pytest.fixture
def registry_file(tmp_path: Path) -> Path:
    path = tmp_path / "migrate-cron.toml"
    path.write_text(REGISTRY)
    return path


def _run(store: Store, job_id: int, worker: str = W) -> AttemptRun:
    now = store.db_now()
    return AttemptRun(now - timedelta(seconds=2), now, exit_code=1, error="exit code 1")


def _claim(store: Store, kind: str) -> int:
    (job,) = store.claim(W, 1, lease=600, kinds=[kind])
    return job.attempts


def test_runs_are_numbered_by_place_and_an_operator_retry_opens_a_round(
    store: Store, registry_file: Path
) -> None:
    job_id = store.enqueue("export", max_attempts=2).job_id
    for _ in range(2):
        attempt = _claim(store, "export")
        store.fail(W, job_id, "exit code 1", run=_run(store, job_id), attempt=attempt)
    assert store.retry([job_id]) == 1
    attempt = _claim(store, "export")
    assert attempt == 1  # the stored counter started again
    assert store.complete(W, [job_id], runs={job_id: _run(store, job_id)}) == 1
    detail = pages.job_detail(store, load_registry(registry_file), job_id)
    assert detail is not None
    if not store.attempts_enabled():  # pragma: no cover - the tables are made new here
        pytest.skip("no attempt history")
    assert [(r.number, r.attempt.attempt, r.round, r.retried_by_operator) for r in detail.runs] == [
        (1, 1, 1, False),
        (2, 2, 1, False),
        (3, 1, 2, True),
    ]


def test_numbering_needs_no_database() -> None:
    assert numbered([]) == []


def test_a_running_job_shows_its_worker_elapsed_time_and_output_so_far(
    store: Store, registry_file: Path
) -> None:
    job_id = store.enqueue("export").job_id
    _claim(store, "export")
    assert store.write_output(W, {job_id: "step 1 of 3\n"}) == 1
    detail = pages.job_detail(store, load_registry(registry_file), job_id)
    assert detail is not None and detail.running is not None and detail.next_retry is None
    assert detail.running.worker == W and detail.running.output == "step 1 of 3\n"
    assert detail.running.elapsed is not None and detail.running.elapsed >= 0
    assert detail.running.lease_left is not None and detail.running.lease_left > 0


def test_an_open_job_after_a_failure_says_when_it_runs_again_and_why(
    store: Store, registry_file: Path
) -> None:
    job_id = store.enqueue("export", max_attempts=3).job_id
    attempt = _claim(store, "export")
    assert store.fail(W, job_id, "exit code 7: disk full", retry_in=300, attempt=attempt) == "open"
    detail = pages.job_detail(store, load_registry(registry_file), job_id)
    assert detail is not None and detail.running is None
    retry = detail.next_retry
    assert retry is not None
    assert (retry.attempt, retry.max_attempts, retry.error) == (1, 3, "exit code 7: disk full")
    assert 0 < retry.wait <= 300
    assert (retry.base, retry.cap, retry.ceiling) == (10.0, 600.0, 20.0)  # min(600, 10 x 2^1)


def test_the_command_shows_how_it_runs_never_a_secret(registry_file: Path) -> None:
    from migrate_cron.web.job_story import command_view

    view = command_view(load_registry(registry_file).get("export"))
    assert view is not None and view.command is not None
    assert "hunter2" not in view.command and "s3cret" not in view.command
    assert view.command.startswith("PGPASSWORD=*** pg_dump 'postgresql://app:***@db/app'")
    assert view.env_names == ["API_TOKEN", "LANG"]
    assert (view.shell, view.cwd, view.user, view.timeout) == ("/bin/sh", "/srv/export", None, 900)
    assert (
        masked("curl -H token=abc https://x/?password=p1")
        == "curl -H token=*** https://x/?password=***"
    )


def test_the_jobs_list_filters_and_links(store: Store, registry_file: Path) -> None:
    reg = load_registry(registry_file)
    mail = store.enqueue("mailer").job_id
    failed = store.enqueue("export", {"file": "a.csv"}, max_attempts=1).job_id
    attempt = _claim(store, "export")
    store.fail(W, failed, "Upload refused", attempt=attempt)
    store.enqueue("export", {"file": "b.csv"})

    found = jobs(store, reg, JobQuery(q="outgoing"), None)
    assert [j.id for j in found.found.jobs] == [mail] and found.found.command_kinds == ["mailer"]
    found = jobs(store, reg, JobQuery(state="failed", q="REFUSED", since="1h"), None)
    assert [j.id for j in found.found.jobs] == [failed] and found.problem is None
    assert found.link(after=5) == "/jobs?state=failed&since=1h&q=REFUSED&after=5"
    assert found.command_line == "migrate-cron jobs list --state failed --since 1h --search REFUSED"
    paged = jobs(store, reg, JobQuery(), None, limit=2)
    assert len(paged.found.jobs) == 2 and paged.found.next_after == paged.found.jobs[-1].id
    assert {"export", "mailer"} <= set(paged.kinds)
    bad = jobs(store, reg, JobQuery(state="sleeping", until="someday"), None)
    assert bad.problem is not None and "sleeping" in bad.problem and bad.found.jobs == []


# ---------------------------------------------------------------------- through the app
def _client(store: Store, registry_file: Path) -> TestClient:
    config = WebConfig(
        database_url="unused://", registry=str(registry_file), log=ActionLog(stream=StringIO())
    )
    return TestClient(create_app(config, store=store))


def test_the_jobs_page_finds_pages_and_refuses_a_bad_filter(
    store: Store, registry_file: Path
) -> None:
    ids = [store.enqueue("mailer", {"n": i}).job_id for i in range(3)]
    store.enqueue("export", {"note": "50% off"})
    with _client(store, registry_file) as web:
        page = web.get("/jobs", params={"kind": "mailer"})
        assert page.status_code == 200
        assert re.findall(r'<tr data-job="(\d+)"', page.text) == [str(i) for i in reversed(ids)]
        assert f'<a href="/jobs/{ids[0]}">' in page.text
        assert (
            'id="jobs-search"' in page.text and '<a href="/jobs" aria-current="page">' in page.text
        )
        found = web.get("/jobs?q=50%25").text
        assert len(re.findall(r'<tr data-job="', found)) == 1 and "50% off" not in found
        assert 'value="50%"' in found
        assert 'id="jobs-older"' not in page.text  # 3 rows: one page
        bad = web.get("/jobs", params={"since": "last tuesday"})
        assert bad.status_code == 400 and 'id="jobs-problem"' in bad.text


def test_the_job_page_tells_the_story(store: Store, registry_file: Path) -> None:
    job_id = store.enqueue("export").job_id
    _claim(store, "export")
    store.write_output(W, {job_id: "rows 1-1000 <done>\n"})
    with _client(store, registry_file) as web:
        page = web.get(f"/jobs/{job_id}").text
    assert 'class="output-so-far"' in page and "rows 1-1000 &lt;done&gt;" in page
    assert f'id="job-worker">{W}<' in page
    assert "API_TOKEN" in page and "LANG" in page
    for secret in ("tok-value-xyz", "C.UTF-8", "hunter2", "s3cret"):
        assert secret not in page


def test_the_jobs_page_pages_with_an_id_cursor_in_the_url(
    store: Store, registry_file: Path
) -> None:
    assert store.enqueue_many("mailer", [{"n": i} for i in range(JOBS_PAGE + 1)]) == JOBS_PAGE + 1
    with _client(store, registry_file) as web:
        first = web.get("/jobs", params={"kind": "mailer"}).text
        rows = re.findall(r'<tr data-job="(\d+)"', first)
        older = re.search(r'<a href="([^"]+)" id="jobs-older">', first)
        assert len(rows) == JOBS_PAGE and older
        assert older.group(1) == f"/jobs?kind=mailer&amp;after={rows[-1]}"
        second = web.get(older.group(1).replace("&amp;", "&")).text
        assert len(re.findall(r'<tr data-job="', second)) == 1
        assert 'id="jobs-older"' not in second and 'id="jobs-newest"' in second
