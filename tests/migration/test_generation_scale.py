"""``generate registry`` grows linearly with the crontab: each costly step (reading a crontab
again, comparing a line with every known job) is counted here, never timed."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from migrate_cron.migration import crontab_file
from migrate_cron.migration.crontab_file import crontab_lines
from migrate_cron.migration.generation import generate_registry
from migrate_cron.migration.rewrite import scheduler_line
from migrate_cron.registry import Migration, load_registry
from migrate_cron.registry.document import set_switches
from migrate_cron.registry.proposal import KEPT, SWITCHED


def test_a_rerun_reads_the_crontab_once_however_many_of_its_jobs_are_switched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job switched to the scheduler leaves a marker comment in the crontab, which the
    parser proposes nothing for: the merge looks the marker up in the file. It did so by
    reading the whole file once per such job — 10,000 switched jobs, 10,000 readings."""
    crontab = tmp_path / "jobs.crontab"
    lines = [f"{i} {i % 24} * * * /opt/bin/task-{i}.sh" for i in range(40)]
    crontab.write_text("".join(f"{line}\n" for line in lines))
    registry = tmp_path / "migrate-cron.toml"
    generate_registry([str(crontab)], registry, file_format="user", timezone="UTC")
    text = registry.read_text()
    for job in load_registry(registry):
        marked = scheduler_line(job.source.text, job.name)
        lines[job.source.line - 1] = marked
        switch = Migration("cron", str(crontab), marked, datetime(2026, 1, 1, tzinfo=UTC))
        text = set_switches(text, job.name, "scheduler", [switch])
    registry.write_text(text)
    crontab.write_text("".join(f"{line}\n" for line in lines))

    reads: list[str] = []
    real_read = crontab_file.CrontabText.read

    def counted(path: str | Path) -> crontab_file.CrontabText:
        reads.append(str(path))
        return real_read(path)

    monkeypatch.setattr(crontab_file.CrontabText, "read", staticmethod(counted))
    result = generate_registry([str(crontab)], registry, file_format="user", timezone="UTC")
    assert [a.status for a in result.actions] == [SWITCHED] * 40
    assert not result.written
    assert reads == [str(crontab.resolve())]


def test_a_rerun_keeps_every_line_of_a_big_crontab_as_it_was(tmp_path: Path) -> None:
    crontab = tmp_path / "jobs.crontab"
    crontab.write_text("".join(f"{i % 60} * * * * /opt/bin/task-{i}.sh\n" for i in range(300)))
    registry = tmp_path / "migrate-cron.toml"
    first = generate_registry([str(crontab)], registry, file_format="user", timezone="UTC")
    again = generate_registry([str(crontab)], registry, file_format="user", timezone="UTC")
    assert len(first.actions) == 300
    assert [a.status for a in again.actions] == [KEPT] * 300
    assert again.after == first.after and not again.written


def test_new_entries_leave_no_objects_behind_for_the_collector(tmp_path: Path) -> None:
    """Each new entry used to be a tomlkit table (~60 objects in reference cycles, ~30 KB)
    kept until the whole registry was rendered: 3 GB for a 100,000-line crontab, freed only
    by the collector that generation pauses. Written as text, an entry leaves its action."""
    import gc

    from migrate_cron.registry import Source
    from migrate_cron.registry.proposal import GeneratedJob
    from migrate_cron.registry.writer import merge

    def job(i: int) -> GeneratedJob:
        line = f"{i % 60} * * * * /opt/bin/job-{i}"
        return GeneratedJob(
            name=f"job-{i}",
            command=f"/opt/bin/job-{i}",
            schedule=f"{i % 60} * * * *",
            timezone="UTC",
            sources=(Source(str(tmp_path / "c"), i + 1, line),),
            env={"MAILTO": "ops@example.com"},
            note=f"c:{i + 1} — plan step 4\npolicy skip: fixed times",
        )

    proposed = [job(i) for i in range(1000)]
    merge(None, proposed[:5], [], tmp_path, crontab_lines=crontab_lines)  # imports and caches, once
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        text, actions = merge(None, proposed, [], tmp_path, crontab_lines=crontab_lines)
        left = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert len(actions) == 1000 and len(re.findall(r"^\[jobs\.job-\d+\]$", text, re.M)) == 1000
    assert left < 3 * len(proposed), left
