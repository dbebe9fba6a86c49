"""The Jobs page's read model: every job findable by kind, state, creation time and a text
search — ``jobs list``'s filters (``ops.job_search``), so a search means the same on the page
and on the command line — one page at a time, newest first, behind an id cursor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from migrate_cron.ops.job_search import JobQuery, JobsFound

if TYPE_CHECKING:
    from migrate_cron.registry import Registry
    from migrate_cron.store import Store

#: Rows on one page of the Jobs list (an id cursor pages further, like ``jobs list``).
JOBS_PAGE = 100


@dataclass(frozen=True)
class JobsList:
    query: JobQuery
    found: JobsFound
    #: Every kind a filter could name: the registry's and the queue's.
    kinds: list[str]
    states: tuple[str, ...]
    #: Why the filters could not be read (an unknown state, a time that is none): the page
    #: says it above the form, the list stays empty.
    problem: str | None = None

    @property
    def command_line(self) -> str:
        """The same list from the command line."""
        import shlex

        words = ["migrate-cron", "jobs", "list"]
        flags = {"q": "--search"}
        for name, value in self.query.params().items():
            words += [flags.get(name, f"--{name}"), shlex.quote(value)]
        return " ".join(words)

    def link(self, **changes: str | int | None) -> str:
        """This list's URL with some parameters changed (None drops one): every filter is in
        the URL, so a link shows the same list to whoever opens it."""
        from urllib.parse import urlencode

        params: dict[str, str | int] = dict(self.query.params())
        for name, value in changes.items():
            params.pop(name, None)
            if value is not None and value != "":
                params[name] = value
        return f"/jobs?{urlencode(params)}" if params else "/jobs"


def jobs(
    store: Store,
    registry: Registry | None,
    query: JobQuery,
    after: int | None,
    limit: int = JOBS_PAGE,
) -> JobsList:
    """``jobs list`` with the same filters (``ops.job_search``), one page, newest first."""
    from migrate_cron.errors import UsageError
    from migrate_cron.ops.job_search import STATES, find_jobs

    specs = list(registry) if registry is not None else []
    problem = None
    try:
        found = find_jobs(store, specs, query, limit=limit, after=after)
    except UsageError as exc:
        found, problem = JobsFound([], None), str(exc)
    now = store.db_now()
    queued = [k.kind for k in store.status(now, now, slots=False).kinds]
    kinds = sorted({*queued, *(s.name for s in specs)})
    return JobsList(query, found, kinds, STATES, problem)
