"""The kind page's read model: one job kind as an operator acts on it in an incident — its
jobs by state, whether it is paused and by whom, what the registry says of it, its newest
jobs and the actions taken on it (``job_actions``), newest first.

Plain values from the store's named operations, like ``pages.py``; no request objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from migrate_cron.vocabulary import JobState

if TYPE_CHECKING:
    from migrate_cron.registry import JobSpec, Registry
    from migrate_cron.store import Store
    from migrate_cron.store.actions import ActionRecord
    from migrate_cron.store.models import Job

#: Newest jobs listed on the page (the jobs list pages further).
RECENT_JOBS = 10


@dataclass(frozen=True)
class KindPage:
    kind: str
    #: Jobs per state, every row whatever its age.
    counts: dict[str, int]
    #: Who paused it (``pause``'s note), None when it is not paused.
    paused_by: str | None
    #: The registry's job (run now needs it), None for a kind the registry does not name.
    spec: JobSpec | None
    jobs: list[Job]
    actions: list[ActionRecord]

    @property
    def failed(self) -> int:
        return self.counts.get(JobState.FAILED, 0)


def kind_page(store: Store, registry: Registry | None, kind: str) -> KindPage | None:
    """The page of ``kind``; None when nothing knows it (no registry job, job or action)."""
    history = store.kind_history([kind])[kind]
    counts = {state.value: int(getattr(history, state)) for state in JobState}
    spec = registry.jobs.get(kind) if registry is not None else None
    actions = store.actions_for_kind(kind)
    if spec is None and not history.total and not actions:
        return None
    return KindPage(
        kind=kind,
        counts=counts,
        paused_by=store.paused().get(kind),
        spec=spec,
        jobs=store.list_jobs(kind=kind, limit=RECENT_JOBS),
        actions=actions,
    )
