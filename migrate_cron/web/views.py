"""The dashboard's pages: each reads the store through ``pages.py`` and renders one template."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from migrate_cron.errors import MigrateCronError
from migrate_cron.vocabulary import CANCELLABLE_STATES, RETRYABLE_STATES
from migrate_cron.web import pages, trend_charts
from migrate_cron.web.chart import Bar, bars
from migrate_cron.web.guard import Refused
from migrate_cron.web.render import duration, int_param, last_action, registry_of, render, store_of
from migrate_cron.web.settings import WebConfig

WINDOWS = ("1h", "24h", "7d", "30d")


def overview(request: Request) -> Response:
    from migrate_cron.ops.durations import parse_duration

    config: WebConfig = request.app.state.config
    given = request.query_params.get("window")
    try:
        window = parse_duration(given, option="window") if given else config.window
    except MigrateCronError as exc:
        raise Refused(400, str(exc)) from None
    if window <= 0:
        raise Refused(400, "window: must be longer than 0s")
    data = pages.overview(store_of(request), registry_of(request), window)
    kinds = data.report.kinds
    p50_p95 = "run time p50 / p95"
    done = "done in the window"
    charts = [
        (
            p50_p95,
            bars(
                p50_p95,
                [
                    Bar(k.kind, (k.duration_p50, k.duration_p95), duration(k.duration_p95))
                    for k in kinds
                    if k.duration_p95 is not None
                ],
                ("p50", "p95"),
            ),
        ),
        (
            done,
            bars(
                done,
                [Bar(k.kind, (float(k.done),), str(k.done)) for k in kinds if k.done],
                ("done",),
            ),
        ),
    ]
    return render(
        request,
        "overview.html",
        "Overview",
        data=data,
        charts=charts,
        trends=trend_charts.charts(data.trends) if data.trends is not None else [],
        windows=WINDOWS,
        window=given or duration(config.window),
    )


def failed(request: Request) -> Response:
    kind = request.query_params.get("kind") or None
    after = int_param(request.query_params.get("after"))
    shelf = pages.failed(store_of(request), kind, after)
    return render(
        request,
        "failed.html",
        "Failed",
        shelf=shelf,
        tail=pages.output_tail,
        done=last_action(request),
    )


def jobs(request: Request) -> Response:
    """Every job, filtered like ``jobs list`` (kind, state, since, until, q), newest first."""
    from migrate_cron.ops.job_search import JobQuery
    from migrate_cron.web.job_list import jobs as find

    given = request.query_params

    def param(name: str) -> str | None:
        return given.get(name) or None

    query = JobQuery(
        kind=param("kind"),
        state=param("state"),
        since=param("since"),
        until=param("until"),
        q=param("q"),
        ref=param("ref"),
    )
    after = int_param(given.get("after"))
    data = find(store_of(request), registry_of(request), query, after)
    return render(
        request,
        "jobs.html",
        "Jobs",
        status=400 if data.problem else 200,
        data=data,
        after=after,
        tail=pages.output_tail,
    )


def job(request: Request) -> Response:
    job_id = int(request.path_params["job_id"])
    detail = pages.job_detail(store_of(request), registry_of(request), job_id)
    if detail is None:
        raise Refused(404, f"no job with id {job_id}")
    import json

    payload = json.dumps(detail.job.payload, indent=2, ensure_ascii=False, default=str)
    return render(
        request,
        "job.html",
        f"Job {job_id}",
        detail=detail,
        payload=payload,
        retryable=detail.job.state in RETRYABLE_STATES,
        cancellable=detail.job.state in CANCELLABLE_STATES,
        done=last_action(request),
        job_actions=store_of(request).actions_for_job(job_id),
    )


def kind(request: Request) -> Response:
    """One kind: its counts, pause, run now, retry of its failed jobs, jobs and actions."""
    from migrate_cron.web.kinds import kind_page

    name = str(request.path_params["kind"])
    page = kind_page(store_of(request), registry_of(request), name)
    if page is None:
        raise Refused(404, f"no job kind {name!r}: not in the registry, no job, no action")
    return render(request, "kind.html", f"Kind {name}", page=page, done=last_action(request))


def retry_failed_form(request: Request) -> Response:
    """The confirmation step of "retry every failed job of a kind"."""
    from migrate_cron.vocabulary import JobState

    name = str(request.path_params["kind"])
    count = store_of(request).count_jobs(kind=name, states=(JobState.FAILED,))
    return retry_failed_page(request, name, count)


def schedules(request: Request) -> Response:
    rows = pages.schedules(store_of(request), registry_of(request))
    return render(request, "schedules.html", "Schedules", rows=rows)


def migration(request: Request) -> Response:
    store = store_of(request)
    board = pages.migration(store, registry_of(request), datetime.now(UTC))
    return render(request, "migration.html", "Migration", board=board)


def workers(request: Request) -> Response:
    from migrate_cron.web.worker_board import workers as worker_board

    board = worker_board(store_of(request))
    return render(request, "workers.html", "Workers", board=board)


def healthz(request: Request) -> Response:
    return PlainTextResponse("ok\n")


def retry_failed_page(
    request: Request, kind: str, count: int, *, seen: int | None = None, status: int = 200
) -> Response:
    """The confirmation: "retry N failed jobs of KIND?" (not refreshed: the number confirmed
    is the number read)."""
    return render(
        request,
        "retry_failed.html",
        f"Retry failed {kind}",
        status=status,
        kind=kind,
        count=count,
        seen=seen,
        refresh=0,
    )
