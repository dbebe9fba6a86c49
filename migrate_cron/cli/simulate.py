"""``migrate-cron simulate``: what each job's policy would enqueue and skip over a period with
downtime, printed as a table (or JSON); ``scheduler.simulate`` computes it, no database."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import JsonFlag, RegistryPath
from migrate_cron.cli.scheduler import AllFlag
from migrate_cron.cli.times import job_zones, local_time, parse_time, print_table, utc_time
from migrate_cron.config import DEFAULT_REGISTRY

if TYPE_CHECKING:
    from migrate_cron.scheduler.simulate import Downtime

SIMULATE_HELP = (
    "Print what each job's policy would enqueue and skip over a period with downtime, without "
    "touching the database. Before --from every job is assumed to have run normally; the "
    "scheduler restarts at the end of each --down."
)


def register(app: typer.Typer) -> None:
    app.command("simulate", help=SIMULATE_HELP)(simulate)


def simulate(
    jobs: Annotated[
        list[str] | None,
        typer.Argument(help="Jobs to simulate (default: the jobs the scheduler owns)."),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(
            "--from", help="Start of the simulated period (default: the first --down, or now)."
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="End of the period (default: an hour after the last --down, or --from + 1 day).",
        ),
    ] = None,
    down: Annotated[
        list[str] | None,
        typer.Option(
            "--down",
            help="FROM..TO: the scheduler is not running then (repeatable).",
        ),
    ] = None,
    tz: Annotated[
        str, typer.Option("--tz", help="Timezone for times given without an offset.")
    ] = "UTC",
    include_all: AllFlag = False,
    as_json: JsonFlag = False,
    registry: RegistryPath = DEFAULT_REGISTRY,
) -> None:
    """See ``SIMULATE_HELP``."""
    from datetime import UTC, datetime

    from migrate_cron.crontab.timezone import check_zone
    from migrate_cron.errors import UsageError
    from migrate_cron.registry import load_registry
    from migrate_cron.scheduler.scheduler import scheduled_jobs
    from migrate_cron.scheduler.simulate import period, summary
    from migrate_cron.scheduler.simulate import simulate as run_simulation

    check_zone(tz)
    selected = scheduled_jobs(load_registry(registry), jobs or [], include_all)
    if not selected:
        raise UsageError(
            f"{registry}: no job to simulate: name jobs, or pass --all for every scheduled job"
        )
    downs = [_downtime(d, tz) for d in down or []]
    t0, t1 = period(
        parse_time(start, "--from", tz) if start else None,
        parse_time(end, "--to", tz) if end else None,
        downs,
        datetime.now(UTC),
    )
    if t1 < t0:
        raise UsageError("--to is before --from")
    try:
        runs = run_simulation(selected, t0, t1, downs)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    zones = {j.name: z for j, z in job_zones(selected)}
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json(
            {
                "from": t0,
                "to": t1,
                "down": [{"from": d.start, "to": d.end} for d in downs],
                "runs": [
                    {
                        "job": r.job,
                        "slot": r.slot,
                        "slot_local": local_time(r.slot, zones[r.job]),
                        "action": r.action,
                        "reason": r.reason,
                        "acted_at": r.acted_at,
                    }
                    for r in runs
                ],
                "summary": summary(runs, [j.name for j in selected]),
            }
        )
        return
    rows = [
        (
            r.job,
            local_time(r.slot, zones[r.job]),
            utc_time(r.slot),
            r.action,
            r.reason,
            utc_time(r.acted_at),
        )
        for r in runs
    ]
    print_table(("JOB", "SLOT (job time)", "SLOT (UTC)", "ACTION", "WHY", "ACTED AT (UTC)"), rows)
    from migrate_cron.cli.common import info

    for name, counts in summary(runs, [j.name for j in selected]).items():
        info(
            f"{name}: {counts['enqueue']} enqueued ({counts['late']} late), "
            f"{counts['skip']} skipped"
        )


def _downtime(text: str, tz: str) -> Downtime:
    from migrate_cron.errors import UsageError
    from migrate_cron.scheduler.simulate import Downtime

    first, sep, second = text.partition("..")
    if not sep or not first or not second:
        raise UsageError(f"--down {text!r}: use FROM..TO, e.g. 2026-03-29T01:00..2026-03-29T04:00")
    try:
        return Downtime(parse_time(first, "--down", tz), parse_time(second, "--down", tz))
    except ValueError as exc:
        raise UsageError(f"--down {text!r}: {exc}") from None
