"""``verify NAME``: is the switch of one crontab line safe, before and after it is made?

Three checks, each ``ok``, ``fail``, ``waiting`` (nothing could have happened yet) or
``skipped`` (does not apply in this mode):

1. **slots** — the minutes cron fires the original line (its schedule in its zone: CRON_TZ or
   the host's) and the slots migrate-cron produces (the registry's schedule and timezone) over
   the next N days are the same; every difference is listed. In enqueue mode this also checks
   that the switched line is still in the crontab, with the original schedule.
2. **dual execution** — no other crontab line still runs the job's command directly, and no
   other registry job runs the same command from the queue.
   **failures** — the registry's command lets a failure reach the queue: a tail that forces
   success (``|| true``, ``; exit 0``) makes every failed run ``done``, never retried nor
   shelved (read from the shell tree, as ``analyze``'s ``errors-swallowed``).
3. **queue** — since the switch, the job ran successfully in the queue: counts, last success,
   last error. A failed run on the shelf fails the check; so does a slot that came and went
   with no success.
4. **alive** — what the switched job needs now: in scheduler mode, a scheduler holding the
   leader lease; in both modes a worker running (the reaper lease renewed), no ready job of
   the kind waiting longer than a worker would leave it, and a worker having run one of its
   jobs since the switch — until then ``waiting``, as no table says which kinds (and users)
   a worker can run (an "ok" with no worker running would be a lie).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate_cron.migration.check import FAIL, Check, Origin, job_origins
from migrate_cron.migration.check_alive import Liveness, alive_check
from migrate_cron.migration.check_dual import dual_check
from migrate_cron.migration.check_queue import failures_check, queue_check
from migrate_cron.migration.check_slots import slots_check
from migrate_cron.registry import JobSpec, Registry
from migrate_cron.vocabulary import Mode

if TYPE_CHECKING:
    from migrate_cron.crontab.entry import CrontabFile
    from migrate_cron.store.models import KindHistory


@dataclass(frozen=True)
class VerifyReport:
    name: str
    mode: Mode
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.status != FAIL for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.name,
            "mode": self.mode,
            "ok": self.ok,
            "checks": [asdict(c) for c in self.checks],
        }


def verify_job(
    registry: Registry,
    spec: JobSpec,
    *,
    files: Sequence[Path] | None,
    days: int,
    now: datetime,
    history: Callable[[datetime], KindHistory],
    read: Callable[[Path, bytes | None], CrontabFile] | None = None,
    host_zone: str | None = None,
    live: Callable[[], Liveness] | None = None,
) -> VerifyReport:
    """Run the checks; ``history(since)`` and ``live()`` read the queue (may raise)."""
    from migrate_cron.crontab.sources import load_crontab as read_crontab
    from migrate_cron.crontab.timezone import host_timezone

    read = read or read_crontab
    zone = host_zone or host_timezone()
    base = Path(registry.path).resolve().parent
    origins = job_origins(spec, base)
    several = len(origins) > 1
    checks = [
        slots_check(spec, origin, read, zone, now, days, several)
        for origin in (origins or [Origin(None, None, None)])
    ]
    own = [o.path for o in origins if o.path is not None]
    checks.append(dual_check(registry, spec, list(files) if files else own, origins, read))
    checks.append(failures_check(spec))
    queue = queue_check(spec, now, history)
    checks.append(queue)
    if registry.errors:
        checks.append(_registry_errors(registry))
    if live is not None:
        checks.append(alive_check(spec, live, queue.data.get("claimed")))
    return VerifyReport(spec.name, Mode(spec.mode), tuple(checks))


def _registry_errors(registry: Registry) -> Check:
    """Entries that did not load: the worker and the scheduler leave them (their runs wait,
    or are spooled by ``enqueue``), so a check of the registry fails on them."""
    errors = list(registry.errors.values())
    return Check(
        "registry",
        "every registry entry loads",
        FAIL,
        f"{len(errors)} entr{'y does' if len(errors) == 1 else 'ies do'} not load: workers and "
        "schedulers leave them, enqueue spools their runs",
        tuple(str(e) for e in errors),
    )
