"""The overview's trend charts through the app, on SQLite, PostgreSQL and MariaDB: a burst of
failures a few minutes ago is a point a browser test can read, at the minute it happened."""

from __future__ import annotations

import re
import warnings
from datetime import timedelta
from io import StringIO
from xml.etree import ElementTree

from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun
from migrate_cron.web.app import WebConfig, create_app
from migrate_cron.web.guard import ActionLog
from migrate_cron.web.trend_charts import step_short, step_words

with warnings.catch_warnings():  # Starlette 1.x would rather have httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

SVG = "{http://www.w3.org/2000/svg}"


def chart(html: str, chart_id: str) -> ElementTree.Element:
    found = re.search(rf'<svg id="{chart_id}".*?</svg>', html, re.S)
    assert found, f"{chart_id} not in the page"
    return ElementTree.fromstring(found.group(0))


def series(svg: ElementTree.Element, name: str) -> dict[str, float]:
    return {
        c.get("data-t", ""): float(c.get("data-v", "nan"))
        for c in svg.iter(f"{SVG}circle")
        if c.get("data-series") == name
    }


def test_a_failure_burst_shows_at_its_minute(store: Store) -> None:
    now = store.db_now()
    burst = (now - timedelta(minutes=18)).replace(second=5, microsecond=0)
    for n in range(5):
        job_id = store.enqueue("export", max_attempts=1).job_id
        assert job_id is not None
        store.claim("w", 1, lease=30, kinds=["export"])
        start = burst + timedelta(seconds=8 * n)
        run = AttemptRun(start, start + timedelta(seconds=2), ready_at=start - timedelta(minutes=3))
        assert store.fail("w", job_id, "boom", run=run) == "failed"
    config = WebConfig(database_url="unused://", log=ActionLog(stream=StringIO()))
    with TestClient(create_app(config, store=store)) as web:
        html = web.get("/?window=1h").text
        month = web.get("/?window=30d")
    throughput = chart(html, "trend-throughput")
    failed = {t: v for t, v in series(throughput, "failed").items() if v}
    assert failed == {f"{burst:%Y-%m-%dT%H:%M}:00Z": 5.0}
    assert len(series(throughput, "done")) in (61, 62)  # one point per minute of the hour
    ages = series(chart(html, "trend-queue-age"), "oldest ready")
    assert max(ages.values()) == 175.0  # due 3 min before its start (:05): 2m55s at the minute
    runtime = chart(html, "trend-runtime")
    assert set(series(runtime, "export p95").values()) == {2.0}
    assert "Runs done and failed per minute (UTC)" in html
    assert month.status_code == 200 and "per 6 hours" in month.text
    assert 'aria-current="true">30d<' in month.text


def test_bucket_words() -> None:
    assert [step_words(s) for s in (60, 600, 3600, 21600, 86400)] == [
        "minute", "10 minutes", "hour", "6 hours", "day",
    ]  # fmt: skip
    assert [step_short(s) for s in (60, 600, 3600, 86400)] == ["/min", "/10min", "/h", "/d"]
