"""Which job already in the registry runs exactly what a proposed entry runs: the one a new
origin of an already switched job belongs to (``writer.merge``). Same command, schedule as
cron expands it, zone, user, stdin, shell and environment (mail settings aside)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tomlkit.items import Table

from migrate_cron.registry.document import job_table
from migrate_cron.registry.proposal import GeneratedJob
from migrate_cron.registry.spec import Source


class SameJobs:
    """The known jobs by what they run, to find the one a new origin of an already switched
    job belongs to. Grouped by command first; a group is keyed by the rest (schedule as cron
    expands it, zone, user, stdin, shell, env but mail settings) the first time a new line
    runs its command: a lookup, never a scan of every job with that command."""

    def __init__(self, jobs: Table, known: Iterable[tuple[str, str]]) -> None:
        """``known``: (job name, file of one of its origins), in registry order."""
        self._jobs = jobs
        #: command → name → the files of its origins (names in registry order)
        self._files: dict[str, dict[str, set[str]]] = {}
        for name, file in known:
            command = job_table(jobs, name).get("command")
            if isinstance(command, str):  # a line's command is text: nothing else matches
                self._files.setdefault(str(command), {}).setdefault(name, set()).add(file)
        self._keyed: dict[str, dict[tuple[object, ...], list[str]]] = {}

    def find(self, g: GeneratedJob, fresh: Sequence[Source]) -> str | None:
        """The first known job that runs exactly what ``g`` runs, in files other than
        ``fresh``'s, if any."""
        names = self._files.get(g.command)
        if not names:
            return None
        keyed = self._keyed.get(g.command)
        if keyed is None:
            keyed = self._keyed[g.command] = {}
            for name in names:
                keyed.setdefault(_run_key(job_table(self._jobs, name)), []).append(name)
        files = {src.file for src in fresh}
        key = _run_key_of(g)
        return next((n for n in keyed.get(key, ()) if not names[n] & files), None)


def _run_key(t: Any) -> tuple[object, ...]:
    """What a known job runs besides its command, comparable with ``_run_key_of``."""
    from migrate_cron.analysis.job import schedule_key

    try:
        env = _env_key(dict(t.get("env", {})))
    except (TypeError, ValueError):
        return (object(),)  # an env that is not a table matches nothing
    return (
        schedule_key(str(t.get("schedule", ""))),
        _plain(t.get("timezone", "UTC")),
        _plain(t.get("user")),
        _plain(t.get("stdin")),
        _plain(t.get("shell", "/bin/sh")),
        env,
    )


def _run_key_of(g: GeneratedJob) -> tuple[object, ...]:
    from migrate_cron.analysis.job import schedule_key

    return (schedule_key(g.schedule), g.timezone, g.user, g.stdin, g.shell, _env_key(g.env))


def _env_key(values: Mapping[Any, Any]) -> tuple[tuple[str, str], ...]:
    from migrate_cron.analysis.job import MAIL_ENV

    return tuple(sorted((str(k), str(v)) for k, v in values.items() if k not in MAIL_ENV))


def _plain(value: Any) -> object:
    """A registry value as a plain, hashable value; one that is neither text, a number nor
    missing (an array, a table) equals nothing a crontab line gives."""
    value = value.unwrap() if hasattr(value, "unwrap") else value
    return value if value is None or isinstance(value, str | int | float) else object()
