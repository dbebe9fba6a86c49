"""From parsed crontab lines to proposed registry entries, before they are merged.

One entry per job line, carrying what the worker needs to run it the way cron did: the command
as cron hands it to the shell (``\\%`` already turned into ``%``), the ``%``-stdin, the env lines
above it (``SHELL`` becomes the entry's shell), the zone cron scheduled it in (``entry_zone``),
the directory cron ran it in (the ``HOME=`` above it, else its user's home), the schedule as
written, and the line itself byte for byte as ``source`` (what rollback restores). Lines cron
would not run, ``@reboot`` lines (no schedule) and lines that are already our own switched
commands are skipped, each with a reason.

Generation never changes when or how a job runs without saying so. A line is *refused* (no
entry, exit 1, one warning naming ``FILE:LINE``) when it never worked as written — the analysis
reports an error on it, or cron ignores its whole file — unless ``--force``, which registers it
with a comment stating the error (never the plan's "cron is fine" verdict); when its zone is
not known (a ``CRON_TZ`` the cron ignores) unless ``--tz`` says it; and when the registry cannot
hold it at all — bytes that are not UTF-8 in it or in an env line above it, a command longer than
``sh -c`` can be given (``crontab.line_limits``: ``analyze`` reports the same lines in the same
words) — which ``--force`` does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_cron.crontab.entry import FILE_IGNORED
from migrate_cron.crontab.flavour import Flavour, flavour
from migrate_cron.crontab.line_limits import (
    COMMAND_TOO_LONG,
    ENV_NOT_UTF8,
    ENV_NUL_BYTE,
    NOT_UTF8,
    NUL_BYTE,
    UNKEEPABLE,
)
from migrate_cron.crontab.sources import spool_owner
from migrate_cron.migration.entry_zone import EntryZone, entry_zone
from migrate_cron.migration.line_advice import Advice, one_sentence
from migrate_cron.migration.working_dir import home_of, working_directory
from migrate_cron.registry import Source, env_problem
from migrate_cron.registry.proposal import GeneratedJob, Refusal
from migrate_cron.vocabulary import Overlap

if TYPE_CHECKING:
    from migrate_cron.crontab.entry import CrontabFile, CrontabLine

_NOT_ENV = ("SHELL", "CRON_TZ")


@dataclass(frozen=True)
class Skipped:
    file: str
    line: int
    reason: str


@dataclass(frozen=True)
class Proposal:
    """What generation proposes for the files: the entries (refused lines included, marked),
    the lines it skipped, and the zone each proposed job got and why."""

    jobs: list[GeneratedJob]
    skipped: list[Skipped]
    zones: list[ZoneUse]
    #: Sentences the user must read: about whole files (a file cron ignores today) and
    #: ``FILE:LINE: …`` about a line whose home directory is missing on this host.
    notices: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ZoneUse:
    """One zone given for one reason, and to which lines (``FILE:LINE``)."""

    zone: str
    reason: str
    lines: tuple[str, ...]


FORCE = "use --force to register it anyway"


def proposed_jobs(
    files: Sequence[CrontabFile],
    advice: Mapping[tuple[str | None, str, int], Advice],
    default_timezone: str,
    user: str | None = None,
    *,
    cron: Flavour | None = None,
    zone_given: bool = False,
    force: bool = False,
) -> Proposal:
    """Registry entries for every job line of ``files`` (paths made absolute), in file order.
    A user-format file's lines run as ``user``, else as the owner its path names (a cron spool
    file), else as the worker's own user (no ``user`` key). ``cron`` read the files;
    ``default_timezone`` is ``--tz`` when ``zone_given``; ``force`` registers lines that never
    worked (with the error as their comment) instead of refusing them."""
    cron = cron or flavour("debian")
    # One look-up per user, not per line (a passwd call and a stat each).
    homes = cache(lambda user: home_of(user, cron))
    jobs: list[GeneratedJob] = []
    skipped: list[Skipped] = []
    zones: dict[tuple[str, str], list[str]] = {}
    by_name: dict[str, int] = {}
    notices: list[str] = []
    for parsed in files:
        path = str(Path(parsed.path).resolve())
        owner = user or spool_owner(parsed.path)
        ignored = _ignored_reason(parsed)
        if ignored and any(not _skip_reason(line) for line in parsed.jobs):
            # The file's good lines are registered, and the user told that they do not run
            # today: migrating them makes them run (what fixing the file would do).
            notices.append(
                f"{parsed.label}: {ignored.rstrip('.')}. Its other lines do not run today "
                "either; the entries registered from it will run once migrated."
            )
        for line in parsed.jobs:
            reason = _skip_reason(line)
            if reason:
                skipped.append(Skipped(parsed.path, line.number, reason))
                continue
            hint = advice.get((parsed.host, path, line.number), Advice())
            errors = hint.errors
            zone = entry_zone(line, hint.name, cron, default_timezone, zone_given)
            refusal = _unkeepable(line) or _refusal(errors, zone, force)
            if isinstance(zone, Refusal):
                zone = EntryZone(default_timezone, "")
            job, homeless = _job(
                line, path, zone.zone, hint, owner, parsed.host, cron, errors, homes
            )
            where = parsed.label
            if refusal is not None:
                jobs.append(replace(job, refusal=replace(refusal, file=where)))
                continue
            if homeless:
                notices.append(f"{where}:{line.number}: {homeless}")
            zones.setdefault((zone.zone, zone.reason), []).append(f"{where}:{line.number}")
            if hint.name in by_name and hint.name != Advice().name:
                # The analysis named it like a line on another host: one job, one more origin.
                index = by_name[hint.name]
                first = jobs[index]
                note = f"also {where}:{line.number}"
                if _mail(first.env) != _mail(job.env):
                    mail = _mail(job.env) or "none"
                    note += f" (its mail settings differ: {mail}; the job keeps the first's)"
                jobs[index] = replace(
                    first, sources=(*first.sources, *job.sources), note=first.note + "\n" + note
                )
                continue
            by_name[hint.name] = len(jobs)
            jobs.append(job)
        for line in parsed.invalid:  # lines cron rejects: named, never dropped silently
            reason = "; ".join(p.message for p in line.problems) or "not valid crontab syntax"
            skipped.append(Skipped(parsed.path, line.number, f"cron rejects this line: {reason}"))
    skipped.sort(key=lambda s: (s.file, s.line))
    used = [ZoneUse(zone, why, tuple(lines)) for (zone, why), lines in zones.items()]
    return Proposal(jobs, skipped, used, notices)


def _refusal(errors: Sequence[str], zone: EntryZone | Refusal, force: bool) -> Refusal | None:
    """Why the line gets no entry, or None: an error first (``--force`` takes it), then an
    unknown zone (only ``--tz`` settles it: --force does not pick a zone)."""
    if errors and not force:
        return Refusal(errors[0], FORCE)
    return zone if isinstance(zone, Refusal) else None


def _ignored_reason(parsed: CrontabFile) -> str:
    """Why none of the file's lines ever ran (cron ignores the whole file), or ''."""
    problem = next((p for p in parsed.problems if p.code in FILE_IGNORED), None)
    return one_sentence(problem.message) if problem is not None else ""


_LOCKED = (
    "\nconcurrency 1, overlap skip: the line had a lock wrapper; the queue now runs one at a "
    "time\nover every host and skips a slot while one runs (the wrapper can go)"
)


def _mail(env: Mapping[str, str]) -> str:
    from migrate_cron.analysis.job import MAIL_ENV

    return ", ".join(f"{k}={v}" for k, v in sorted(env.items()) if k in MAIL_ENV)


def _skip_reason(line: CrontabLine) -> str | None:
    if line.is_reboot:
        return "@reboot runs at boot, not on a schedule: left on cron"
    if not line.schedule or line.command is None:
        return "not a job line cron would run"
    if not (line.shell_command or "").strip():
        return "the command before the first % is empty: cron runs nothing"
    # A NUL byte in the line or an env line above it is the parser's problem (``analyze``
    # names it) and refused like every line the registry cannot hold (``_unkeepable``).
    usable = ((k, v) for k, v in line.env.items() if "\0" not in k + v)
    unusable = next(filter(None, (env_problem(k, v) for k, v in usable)), None)
    if unusable:
        return f"an env line above it cannot be set: {unusable}"
    if "SHELL" in line.env and not line.env["SHELL"].strip():
        return "SHELL= above it is empty: cron cannot start a shell to run the line"
    return None


#: What to do with a line the registry cannot hold (--force cannot take it either).
_UNKEEPABLE_REMEDY = {
    NOT_UTF8: "keep it on cron, or write the line in UTF-8; --force cannot register it",
    ENV_NOT_UTF8: "keep it on cron, or write that env line in UTF-8; --force cannot register it",
    COMMAND_TOO_LONG: "--force cannot register it",
    NUL_BYTE: "remove the NUL byte from the line; --force cannot register it",
    ENV_NUL_BYTE: "remove the NUL byte from that env line; --force cannot register it",
}


def _unkeepable(line: CrontabLine) -> Refusal | None:
    """Why the registry cannot hold ``line`` at all (the parser's words, as ``analyze``
    reports them), or None."""
    problem = next((p for p in line.problems if p.code in UNKEEPABLE), None)
    if problem is None:
        return None
    return Refusal(problem.message, _UNKEEPABLE_REMEDY[problem.code])


def _job(
    line: CrontabLine,
    path: str,
    timezone: str,
    hint: Advice,
    owner: str | None,
    host: str | None,
    cron: Flavour,
    errors: Sequence[str],
    homes: Callable[[str | None], tuple[str | None, str, bool]],
) -> tuple[GeneratedJob, str | None]:
    """The entry, and what to say on stderr about its directory when it is missing here.
    ``owner`` is the user whose crontab a user-format file is (``--user``, or the name of a
    file under a cron spool directory); system lines carry their own user field. A line with
    ``errors`` gets them as its comment, in place of the plan's verdict. ``homes`` is
    ``home_of`` for the flavour (or a cache of it)."""
    env = {k: v for k, v in line.env.items() if k not in _NOT_ENV}
    home, where, missing = working_directory(line, line.user or owner, cron, homes)
    note = hint.note
    if errors:
        head = note.split(" — ", 1)[0].split("\n", 1)[0]
        policy = next((n for n in note.splitlines() if n.startswith("policy ")), "")
        note = "\n".join(
            [f"{head} — registered with --force: it never worked as written under cron:"]
            + [f"error: {e}" for e in errors]
            + ([policy] if policy else [])
        )
    job = GeneratedJob(
        name=hint.name,
        command=line.shell_command or "",
        schedule=line.schedule or "",
        timezone=timezone,
        sources=(Source(path, line.number, line.text, line.user, host),),
        user=line.user or owner,
        shell=line.env.get("SHELL", "/bin/sh"),
        env=env,
        stdin=line.stdin,
        cwd=home,
        cwd_fallback=cron.home_missing_dir,
        policy=hint.policy.value,
        note=note + (f"\n{where}" if where else "") + (_LOCKED if hint.locked else ""),
        concurrency=1 if hint.locked else None,
        overlap=Overlap.SKIP.value if hint.locked else None,
    )
    return job, where.removeprefix("cwd: ") if missing else None
