"""What the switch has bought, on the migration board (a summary and a column) and in the
partial ``bought.html`` a job's own page includes, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import re
import warnings
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest

from migrate_cron.ops.bought import bought_for
from migrate_cron.registry import load_registry
from migrate_cron.store import Store
from migrate_cron.store.models import AttemptRun
from migrate_cron.vocabulary import Tally
from migrate_cron.web import pages
from migrate_cron.web.app import WebConfig, create_app
from migrate_cron.web.guard import ActionLog
from tests.web.project import project

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return project(tmp_path_factory.mktemp("bought-project"))


def rescue(store: Store, kind: str) -> None:
    """A job of ``kind`` that fails once, then passes on its retry (runs timed now)."""
    job_id = store.enqueue(kind, max_attempts=3).job_id
    now = datetime.now(UTC)
    store.claim("w", 1, lease=30, kinds=[kind])
    run = AttemptRun(now, now + timedelta(seconds=1), error="boom")
    assert store.fail("w", job_id, "boom", retry_in=0, run=run) == "open"
    store.claim("w", 1, lease=30, kinds=[kind])
    later = now + timedelta(seconds=2)
    assert store.complete("w", [job_id], runs={job_id: AttemptRun(later, later)}) == 1


def test_the_board_and_a_job_show_what_the_switch_bought(store: Store, registry: Path) -> None:
    store.tally("invoices-export", Tally.DUPLICATE_FIRE, 2)
    store.tally("orders-push-erp", Tally.OVERLAP_HELD, 3)
    store.tally("orders-push-erp", Tally.MISSED_SKIPPED, 4)
    store.tally("carts-remind-abandoned", Tally.MISSED_RUN, 9)  # still on cron: not shown
    rescue(store, "invoices-export")

    reg = load_registry(str(registry))
    board = pages.migration(store, reg, datetime.now(UTC))
    figures = {r.progress.name: r.bought for r in board.rows}
    assert figures["carts-remind-abandoned"] is None
    invoices = figures["invoices-export"]
    assert invoices is not None and invoices.since is not None
    assert {w: n for w, _, n in invoices.figures} == {
        "rescued": 1, "overlap-held": 0, "missed-run": 0, "missed-skipped": 0,
        "duplicate-fire": 2,
    }  # fmt: skip
    assert {w: n for w, _, n in board.bought} == {
        "rescued": 1, "overlap-held": 3, "missed-run": 0, "missed-skipped": 4,
        "duplicate-fire": 2,
    }  # fmt: skip
    assert bought_for(store, reg.get("invoices-export")) == invoices

    config = WebConfig(database_url="unused://", registry=str(registry), log=ActionLog(StringIO()))
    app = create_app(config, store=store)
    with TestClient(app) as web:
        html = web.get("/migration").text
    summary = html.split('<section id="bought">', 1)[1].split("</section>", 1)[0]
    assert '<li data-what="overlap-held"><b>3</b>' in summary
    assert '<li data-what="rescued"><b>1</b> runs that failed, then succeeded' in summary
    row = re.search(r'<tr data-job="invoices-export">(.*?)</tr>', html, re.S)
    assert row and '<li data-what="duplicate-fire"><b>2</b>' in row.group(1)
    assert "since the switch" in row.group(1)
    cron = re.search(r'<tr data-job="carts-remind-abandoned">(.*?)</tr>', html, re.S)
    assert cron and "still on cron" in cron.group(1) and "<b>9</b>" not in cron.group(1)

    partial = app.state.templates.env.get_template("bought.html")
    alone = partial.render(bought=invoices)
    assert '<ul class="bought small" data-kind="invoices-export">' in alone
    assert "still on cron" in partial.render(bought=None)
