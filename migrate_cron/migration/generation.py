"""From parsed crontab lines to proposed registry entries (``generate registry``).

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

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_cron.analysis.finding import RuleId
from migrate_cron.crontab.entry import FILE_IGNORED, Severity
from migrate_cron.crontab.flavour import Flavour, flavour
from migrate_cron.crontab.line_limits import COMMAND_TOO_LONG, ENV_NOT_UTF8, NOT_UTF8, UNKEEPABLE
from migrate_cron.crontab.sources import spool_owner
from migrate_cron.migration.entry_zone import EntryZone, entry_zone
from migrate_cron.registry import NUL_REASON, Source, env_problem
from migrate_cron.registry.proposal import (
    CHANGED,
    REFUSED,
    GeneratedJob,
    MergeAction,
    Refusal,
)
from migrate_cron.vocabulary import Overlap, Policy

if TYPE_CHECKING:
    from migrate_cron.analysis.report import JobReport, Report
    from migrate_cron.crontab.entry import CrontabFile, CrontabLine

_NOT_ENV = ("SHELL", "CRON_TZ")


@dataclass(frozen=True)
class Skipped:
    file: str
    line: int
    reason: str


@dataclass(frozen=True)
class Advice:
    """What the analysis says about one line: its readable name, the suggested missed-run
    policy and a comment for the registry entry."""

    name: str = "job"
    policy: Policy = Policy.SKIP
    note: str = ""
    #: The line guards itself with a lock wrapper (flock -n …): one run at a time, skip
    #: a slot while one runs — what the registry's concurrency/overlap now give.
    locked: bool = False
    #: The analysis's errors on the line, one sentence each: it never worked as written.
    errors: tuple[str, ...] = ()


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
    if "\0" in (line.shell_command or ""):
        return f"the command holds a NUL byte: {NUL_REASON}"
    unusable = next(filter(None, (env_problem(k, v) for k, v in line.env.items())), None)
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


def working_directory(
    line: CrontabLine,
    user: str | None,
    cron: Flavour,
    homes: Callable[[str | None], tuple[str | None, str, bool]] | None = None,
) -> tuple[str | None, str, bool]:
    """Where cron runs the line, a comment saying why, and whether that directory is missing
    on this host: the ``HOME=`` set above it (Debian and cronie chdir to the job's HOME, the
    crontab's value first), else its user's home (``homes``: ``home_of`` for ``cron``, or a
    cache of it). A missing directory is still the entry's ``cwd`` (it may exist where and
    when the worker runs); the comment says what ``cron`` does without it, which the worker
    does too (``cwd_fallback``)."""
    homes = homes or (lambda user: home_of(user, cron))
    home = line.env.get("HOME") if cron.home_from_crontab else None
    if home is None:
        return homes(user)
    if not home.startswith("/"):
        found, where, missing = homes(user)
        return found, f"HOME={home} above the line is not an absolute path; {where}", missing
    if not Path(home).is_dir():
        return home, f"cwd: HOME={home} above the line, which {home_missing(cron)}", True
    return home, f"cwd: HOME={home} above the line: {cron.label} runs the command there", False


def home_of(user: str | None, cron: Flavour) -> tuple[str | None, str, bool]:
    """Where cron runs a line: its owner's home. For a system line that is the user field's
    home on this host; a user crontab is assumed to be the current user's (the usual
    ``crontab -l > file``): a missing one is left unset (the worker's own HOME then)."""
    import pwd

    try:
        home = pwd.getpwnam(user).pw_dir if user else str(Path.home())
    except (KeyError, RuntimeError):
        return None, f"cwd not set: no home directory for {user or 'this user'} on this host", False
    if not Path(home).is_dir():
        if not user:
            return None, f"cwd not set: {home} {home_missing(cron)}", True
        return home, f"cwd: {user}'s home {home}, which {home_missing(cron)}", True
    if user:
        return home, f"cwd: {user}'s home, where cron runs the line", False
    return (
        home,
        "cwd: the home of the user who generated this (cron runs a line in its owner's home)",
        False,
    )


def home_missing(cron: Flavour) -> str:
    """The end of a sentence about a missing directory: what ``cron`` does then, which the
    worker does too."""
    if cron.home_missing_dir is not None:
        return (
            f"does not exist on this host: {cron.label} then runs the command in "
            f"{cron.home_missing_dir}, and so does the worker (cwd_fallback)"
        )
    return (
        f"does not exist on this host: {cron.label} then does not run the command (it logs "
        '"chdir failed"); neither does the worker: each such run fails at once, not retried, '
        "until the directory exists"
    )


@dataclass(frozen=True)
class GenerateResult:
    """What ``generate registry`` did: the merge actions, the skipped lines, the registry's
    text before and after (equal when nothing changed) and whether it was written."""

    registry: str
    actions: tuple[MergeAction, ...]
    skipped: tuple[Skipped, ...]
    before: str
    after: str
    written: bool
    zones: tuple[ZoneUse, ...] = ()
    notices: tuple[str, ...] = ()

    @property
    def conflicts(self) -> list[MergeAction]:
        return [a for a in self.actions if a.status == CHANGED]

    @property
    def refused(self) -> list[MergeAction]:
        """Lines that got no entry: each one's ``detail`` says why and what to do."""
        return [a for a in self.actions if a.status == REFUSED]


def generate_registry(
    paths: Sequence[str | Path],
    output: Path,
    *,
    force: bool = False,
    dry_run: bool = False,
    timezone: str | None = None,
    user: str | None = None,
    file_format: str = "auto",
    cron: str = "debian",
) -> GenerateResult:
    """Analyze ``paths`` (files or ``HOST:PATH``) as ``cron`` reads them and merge one entry
    per job into the registry at ``output`` — the same line on several hosts is one job with
    several origins; ``user`` is whose crontab the user-format files are (system lines name
    their own)."""
    from migrate_cron.crontab.gc_pause import gc_paused

    # The analysis and an existing registry (parsed by tomlkit) are millions of objects built
    # in bulk: with the collector on, each of its passes rescans the growing heap. New
    # entries are written as text (``AppendedEntries``), so nothing waits for it meanwhile.
    with gc_paused():
        return _generate(paths, output, force, dry_run, timezone, user, file_format, cron)


def _generate(
    paths: Sequence[str | Path],
    output: Path,
    force: bool,
    dry_run: bool,
    timezone: str | None,
    user: str | None,
    file_format: str,
    cron: str,
) -> GenerateResult:
    from migrate_cron.crontab.timezone import host_timezone
    from migrate_cron.migration.commit import registry_lock
    from migrate_cron.migration.crontab_file import atomic_write, crontab_lines
    from migrate_cron.migration.planning import analyze_files
    from migrate_cron.registry.writer import merge

    zone = timezone or host_timezone()
    report = analyze_files(paths, default_tz=zone, file_format=file_format, cron=cron)
    proposal = proposed_jobs(
        report.files,
        advice_for(report),
        zone,
        user,
        cron=flavour(cron),
        zone_given=timezone is not None,
        force=force,
    )
    registry_dir = output.resolve().parent
    with registry_lock(output, dry_run):
        before = output.read_text(encoding="utf-8") if output.exists() else ""
        after, actions = merge(
            before or None, proposal.jobs, [f.path for f in report.files], registry_dir,
            force=force, crontab_lines=crontab_lines,
        )  # fmt: skip
        written = not dry_run and after != before
        if written:
            atomic_write(output, after.encode("utf-8"))
    return GenerateResult(
        str(output),
        tuple(actions),
        tuple(proposal.skipped),
        before,
        after,
        written,
        tuple(proposal.zones),
        tuple(proposal.notices),
    )


def advice_for(report: Report) -> dict[tuple[str | None, str, int], Advice]:
    """What the analysis says about each job line, by (host, absolute file, line number)."""
    from migrate_cron.migration.planning import STEPS

    steps = {(p.host, p.file, p.line): p for p in report.plan}
    resolved = cache(lambda file: str(Path(file).resolve()))  # once per file, not per line
    advice: dict[tuple[str | None, str, int], Advice] = {}
    for r in report.jobs:
        line = r.job.line
        item = steps.get((r.job.host, line.file, line.number))
        verdict = r.classification
        note = f"{r.job.host}:" if r.job.host else ""
        note += f"{line.file}:{line.number}"
        if item is not None:
            step, title = STEPS.get(str(item.category), (4, str(item.category)))
            note += f" — plan step {step} ({title}): {'; '.join(item.reasons)}"
        note += f"\npolicy {verdict.policy}: {verdict.policy_reason}"
        advice[(r.job.host, resolved(line.file), line.number)] = Advice(
            name=r.job.name,
            policy=verdict.policy,
            note=note,
            locked=any(f.rule == RuleId.OVERLAP_LOCK for f in r.findings),
            errors=line_errors(r),
        )
    return advice


def line_errors(report: JobReport) -> tuple[str, ...]:
    """The analysis's errors on one job line, one sentence each. A command that ends with a
    backslash counts even when no rule reports it yet: cron has no line continuation, so the
    next line never was part of it (and the shell gets a stray backslash)."""
    errors = tuple(one_sentence(f.message) for f in report.findings if f.severity is Severity.ERROR)
    command = report.job.line.shell_command or ""
    if not errors and _continued(command):
        errors = (
            "the command ends with a backslash, but cron has no line continuation: the next "
            "line is not part of it, and the shell gets a literal \\ as its last word",
        )
    return errors


def _continued(command: str) -> bool:
    """Whether ``command`` ends with an unescaped backslash (blanks after it ignored)."""
    text = command.rstrip(" \t")
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def one_sentence(message: str) -> str:
    """The first sentence of a finding's message, on one line, without its final period."""
    text = " ".join(message.split())
    end = _SENTENCE_END.search(text)
    if end is not None:
        text = text[: end.start()]
    return text.rstrip(".")


def reboot_line_named(
    name: str, paths: Sequence[str], file_format: str = "auto", cron: str = "debian"
) -> str | None:
    """Where the ``@reboot`` line that ``analyze`` names ``name`` is (``FILE:LINE``), or None.

    ``generate`` leaves @reboot lines on cron on purpose (they run when cron starts, not on a
    schedule), so they have no registry entry; ``migrate`` uses this to say so instead of
    "no job". Unreadable files are passed over: this only explains a refusal.
    """
    from datetime import UTC, datetime

    from migrate_cron.analysis.report import analyze
    from migrate_cron.crontab.parser import read_crontab

    files = []
    for path in dict.fromkeys(paths):
        try:
            files.append(read_crontab(path, format=file_format, cron=cron))
        except OSError:
            continue
    report = analyze(files, now=datetime(2000, 1, 1, tzinfo=UTC), next_count=0, cron=cron)
    for job in report.jobs:
        if job.job.name == name and job.job.line.is_reboot:
            return job.job.line.location
    return None
