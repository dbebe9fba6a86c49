"""Finding jobs: the filters ``jobs list`` and the console's Jobs page share, so a search typed
in one finds what it finds in the other.

A time bound is how long ago (``2h``, ``7d``: the durations every command takes, counted back
from the database's clock) or a moment (``2026-03-01``, ``2026-03-01T12:00``, ``… 12:00:00Z``,
``…+02:00``; without a zone, UTC like every time the commands print). The text search looks in
the last error, the output and the payload (the store does that), and in the registry's
commands: the registry is a file, not a table, so the kinds whose command holds the text are
found here and handed to the store, which lists their jobs too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from migrate_cron.errors import UsageError
from migrate_cron.vocabulary import JobState

if TYPE_CHECKING:
    from migrate_cron.registry import JobSpec
    from migrate_cron.store import Store
    from migrate_cron.store.models import Job

STATES = tuple(JobState)


@dataclass(frozen=True)
class JobQuery:
    """The filters as typed (``--since 2h`` stays ``2h``), so a page can put them back in its
    links and its form unchanged."""

    kind: str | None = None
    state: str | None = None
    since: str | None = None
    until: str | None = None
    q: str | None = None
    ref: str | None = None

    def params(self) -> dict[str, str]:
        """The filters that are set, by name (a URL's query)."""
        return {k: v for k, v in asdict(self).items() if v}


@dataclass(frozen=True)
class JobsFound:
    jobs: list[Job]
    #: The cursor of the next (older) page: the last id shown; None on the last page.
    next_after: int | None
    #: The bounds as moments (what ``2h`` meant when the page was read).
    since: datetime | None = None
    until: datetime | None = None
    #: The kinds listed because their registry command holds the searched text.
    command_kinds: list[str] = field(default_factory=list)


def moment(text: str, now: datetime, *, option: str) -> datetime:
    """``text`` as a moment: a duration counts back from ``now``, else an ISO date/time."""
    from migrate_cron.ops.durations import parse_duration

    raw = text.strip()
    try:
        stamp = datetime.fromisoformat(raw.replace("z", "Z"))
    except ValueError:
        try:
            return now - timedelta(seconds=parse_duration(raw, option=option))
        except UsageError:
            raise UsageError(
                f"{option}: {text!r} is neither a duration (2h, 7d) nor a date and time "
                "(2026-03-01 or 2026-03-01T12:00, UTC unless a zone is given)"
            ) from None
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def command_kinds(specs: Iterable[JobSpec], text: str) -> list[str]:
    """The registry jobs whose command (or handler) holds ``text``, in any case."""
    word = text.strip().lower()
    if not word:
        return []
    return sorted(s.name for s in specs if word in f"{s.command or ''}\n{s.handler or ''}".lower())


def check(query: JobQuery, *, prefix: str = "") -> None:
    """Refuse a state no job can be in (``prefix``: ``--`` for the command's option names)."""
    if query.state and query.state not in STATES:
        raise UsageError(f"{prefix}state: {query.state!r} is not one of {', '.join(STATES)}")


def find_jobs(
    store: Store,
    specs: Iterable[JobSpec],
    query: JobQuery,
    *,
    limit: int = 50,
    after: int | None = None,
    prefix: str = "",
) -> JobsFound:
    """One page of the jobs matching ``query``, newest first, older than id ``after``."""
    check(query, prefix=prefix)
    now = store.db_now() if query.since or query.until else None
    since = moment(query.since, now, option=f"{prefix}since") if query.since and now else None
    until = moment(query.until, now, option=f"{prefix}until") if query.until and now else None
    text = (query.q or "").strip() or None
    kinds = command_kinds(specs, text) if text else []
    jobs = store.list_jobs(
        state=query.state or None,
        kind=query.kind or None,
        limit=limit,
        ref=query.ref or None,
        since=since,
        until=until,
        before_id=after,
        search=text,
        search_kinds=kinds,
    )
    more = jobs[-1].id if len(jobs) == limit and jobs else None
    return JobsFound(jobs, more, since, until, kinds)
