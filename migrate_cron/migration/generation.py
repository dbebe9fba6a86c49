"""``generate registry``: analyze crontabs and merge one entry per job line into the registry.

The entries are proposed by ``entries`` (what each carries, which lines are skipped or refused
and why) from what the analysis says of each line (``line_advice``); here they are merged into
the registry file under its lock, written only when they change it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from migrate_cron.crontab.flavour import flavour
from migrate_cron.migration.entries import Skipped, ZoneUse, proposed_jobs
from migrate_cron.migration.line_advice import advice_for
from migrate_cron.registry.proposal import CHANGED, REFUSED, MergeAction


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
