"""``generate registry`` never changes when or how a job runs without saying so: lines that
never worked are refused (or taken with --force and a comment saying why), the zone and the
working directory are cron's, and each choice is said."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.crontab.flavour import flavour
from migrate_cron.crontab.parser import parse_crontab
from migrate_cron.crontab.timezone import host_timezone
from migrate_cron.migration.crontab_file import crontab_lines
from migrate_cron.migration.entry_zone import EntryZone, entry_zone
from migrate_cron.migration.generation import generate_registry
from migrate_cron.migration.line_advice import one_sentence
from migrate_cron.migration.working_dir import working_directory
from migrate_cron.registry.proposal import KEPT, NEW, REFUSED, Refusal

DEBIAN, CRONIE, BUSYBOX = flavour("debian"), flavour("cronie"), flavour("busybox")


def run(tmp_path: Path, text: str, **options: Any) -> tuple[dict[str, Any], list[Any], str]:
    """Generate from one user crontab holding ``text``: the registry's jobs, the actions and
    the registry's text."""
    crontab = tmp_path / "jobs.crontab"
    crontab.write_bytes(text.encode("utf-8", "surrogateescape"))
    out = tmp_path / "migrate-cron.toml"
    options.setdefault("file_format", "user")
    result = generate_registry([str(crontab)], out, **options)
    text = out.read_text() if out.exists() else ""
    return tomllib.loads(text).get("jobs", {}), list(result.actions), text


def refused(actions: list[Any]) -> dict[int, str]:
    return {a.line: a.detail for a in actions if a.status == REFUSED}


# -- lines that never worked ---------------------------------------------------------------


def test_a_line_analyze_calls_an_error_is_refused_with_the_finding_and_the_way_out(
    tmp_path: Path,
) -> None:
    text = (
        "0 2 * * * /usr/local/bin/rotate-uploads\n"
        "0 3 * * * /usr/bin/tar czf /srv/archive/site-$(date +%Y%m%d).tgz /srv/site\n"
    )
    jobs, actions, _ = run(tmp_path, text)
    assert list(jobs) == ["rotate-uploads"]
    [(line, detail)] = refused(actions).items()
    assert line == 2
    assert detail.startswith("cron cuts the command at its first unescaped %")
    assert detail.endswith("(use --force to register it anyway)")
    assert "\n" not in detail


def test_force_registers_it_with_the_error_as_its_comment_never_a_verdict(
    tmp_path: Path,
) -> None:
    # A nightly backup is what the classifier calls "a schedule is exactly right".
    text = "30 1 * * * /usr/bin/pg_dump shop > /srv/backup/shop-$(date +%F).sql\n"
    jobs, actions, registry = run(tmp_path, text, force=True)
    assert [a.status for a in actions] == [NEW]
    [job] = jobs.values()
    assert job["command"].startswith("/usr/bin/pg_dump")
    assert "registered with --force: it never worked as written under cron" in registry
    assert "# error: cron cuts the command at its first unescaped %" in registry
    for verdict in ("cron is fine", "exactly right", "plan step", "leave alone", "keep on cron"):
        assert verdict not in registry


def test_a_command_ending_in_a_backslash_is_not_registered_as_is(tmp_path: Path) -> None:
    """cron has no line continuation: the next line was never part of the command."""
    text = "0 5 * * * /opt/etl/bin/load --source crm \\\n    --target dwh\n0 6 * * * /opt/x \\\\\n"
    jobs, actions, _ = run(tmp_path, text)
    assert 1 in refused(actions) and "backslash" in refused(actions)[1]
    assert [j["command"] for j in jobs.values()] == ["/opt/x \\\\"]  # an escaped one is text


def test_lines_of_a_file_debian_ignores_are_registered_with_a_warning(tmp_path: Path) -> None:
    """The good lines are what the file was meant to run: registered, never in silence (a
    notice says the file runs nothing today); the bad line is not taken."""
    cron_d = tmp_path / "cron.d"
    cron_d.mkdir()
    backup = cron_d / "backup"
    # The second line has no user field: Debian's cron ignores the whole file.
    backup.write_text("0 2 * * * root /usr/local/bin/backup\n0 3 * * * /usr/local/bin/prune\n")
    result = generate_registry([str(backup)], tmp_path / "migrate-cron.toml")
    assert [(a.status, a.line) for a in result.actions] == [(NEW, 1)]
    [notice] = result.notices
    assert notice.startswith(f"{backup}: Debian's cron ignores this whole file")
    assert "line 2 is rejected" in notice and "do not run today either" in notice
    assert [s.line for s in result.skipped] == [2]
    assert result.skipped[0].reason.startswith("cron rejects this line")


def test_a_line_registered_earlier_is_kept_and_says_why_it_would_be_refused(
    tmp_path: Path,
) -> None:
    text = "15 4 * * * /usr/bin/find /srv/tmp -mtime +7 -printf '%p\\n' -delete\n"
    run(tmp_path, text, force=True)
    jobs, actions, _ = run(tmp_path, text)
    assert len(jobs) == 1
    [action] = actions
    assert action.status == KEPT and "now it would be refused: cron cuts" in action.detail


# -- the zone ------------------------------------------------------------------------------

BERLIN = "CRON_TZ=Europe/Berlin\n30 2 * * * /opt/shop/bin/export-invoices\n"


def test_cronie_schedules_in_cron_tz_and_says_so(tmp_path: Path) -> None:
    jobs, _, _ = run(tmp_path, BERLIN, cron="cronie", timezone="UTC")
    assert jobs["export-invoices"]["timezone"] == "Europe/Berlin"
    line = parse_crontab(BERLIN, "x", cron="cronie").jobs[0]
    chosen = entry_zone(line, "export-invoices", CRONIE, "UTC", given=True)
    assert chosen == EntryZone("Europe/Berlin", "CRON_TZ above them, which cronie schedules in")


def test_debian_ignores_cron_tz_so_the_zone_must_be_given(tmp_path: Path) -> None:
    """The reported bug: CRON_TZ=America/New_York became "UTC" without a word."""
    text = "CRON_TZ=America/New_York\n0 9 * * 1-5 /opt/bin/open-desk\n"
    line = parse_crontab(text, "x").jobs[0]
    refusal = entry_zone(line, "open-desk", DEBIAN, "UTC", given=False)
    assert isinstance(refusal, Refusal)
    assert refusal.reason.startswith("job open-desk: Debian's cron ignores CRON_TZ=America")
    assert "--tz UTC if cron runs on this host" in refusal.remedy
    assert "--cron cronie" in refusal.remedy
    given = entry_zone(line, "open-desk", DEBIAN, "Europe/Lisbon", given=True)
    assert isinstance(given, EntryZone) and given.zone == "Europe/Lisbon"
    assert "--tz" in given.reason and "ignores CRON_TZ=America/New_York" in given.reason
    same = entry_zone(line, "open-desk", BUSYBOX, "America/New_York", given=False)
    assert isinstance(same, EntryZone) and same.zone == "America/New_York"


def test_a_refused_zone_is_not_written_and_the_others_are(tmp_path: Path) -> None:
    text = "0 1 * * * /opt/bin/first\nCRON_TZ=Asia/Tokyo\n0 9 * * * /opt/bin/later\n"
    jobs, actions, _ = run(tmp_path, text)
    assert list(jobs) == ["first"]
    assert "job later: Debian's cron ignores CRON_TZ=Asia/Tokyo" in refused(actions)[3]
    # Re-run with --tz: the refused line is taken; the entry already written stays as it was.
    jobs, actions, _ = run(tmp_path, text, timezone="Europe/Paris")
    zones = {n: j["timezone"] for n, j in jobs.items()}
    assert zones == {"first": host_timezone(), "later": "Europe/Paris"}
    assert not refused(actions)


def test_the_zone_each_job_got_is_reported(tmp_path: Path) -> None:
    crontab = tmp_path / "c"
    crontab.write_text("0 1 * * * /opt/bin/a\nCRON_TZ=Asia/Tokyo\n0 9 * * * /opt/bin/b\n")
    result = generate_registry(
        [str(crontab)], tmp_path / "r.toml", cron="cronie", timezone="UTC", file_format="user"
    )
    assert [(z.zone, z.lines) for z in result.zones] == [
        ("UTC", (f"{crontab}:1",)),
        ("Asia/Tokyo", (f"{crontab}:3",)),
    ]
    assert result.zones[0].reason == "--tz"


# -- the working directory -----------------------------------------------------------------


def test_cwd_is_the_home_set_above_the_line(tmp_path: Path) -> None:
    text = (
        "0 1 * * * /usr/bin/uptime\n"
        "HOME=/srv/reports/current\n"
        "0 2 * * * ./bin/nightly --all\n"
        "HOME=relative/dir\n"
        "0 3 * * * ./bin/other\n"
    )
    jobs, _, registry = run(tmp_path, text)
    assert jobs["nightly"]["cwd"] == "/srv/reports/current"
    assert jobs["nightly"]["env"]["HOME"] == "/srv/reports/current"
    assert (
        "cwd: HOME=/srv/reports/current above the line, which does not exist on this host: "
        "Debian's cron then runs the command in /var/spool/cron" in registry
    )
    assert jobs["nightly"]["cwd_fallback"] == "/var/spool/cron"
    # Above it nothing set HOME: as before, the home of the crontab's user.
    assert jobs["uptime"].get("cwd") == str(Path.home())
    assert "HOME=relative/dir above the line is not an absolute path" in registry


def test_busybox_runs_in_the_passwd_home_whatever_home_says() -> None:
    line = parse_crontab("HOME=/srv/app\n0 2 * * * ./run\n", "x", cron="busybox").jobs[0]
    assert working_directory(line, None, BUSYBOX)[0] == (
        str(Path.home()) if Path.home().is_dir() else None
    )
    assert working_directory(line, None, CRONIE)[0] == "/srv/app"


# -- what is said --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("the last line has no newline.", "the last line has no newline"),
        ("one thing: it fails. Fix it by x.", "one thing: it fails"),
        ("spread\nover  lines", "spread over lines"),
        ("uses e.g. 5 and 6", "uses e.g. 5 and 6"),
    ],
)
def test_one_sentence(message: str, expected: str) -> None:
    assert one_sentence(message) == expected


def test_non_utf8_bytes_are_refused_even_with_force_and_nothing_breaks(tmp_path: Path) -> None:
    """The registry is UTF-8 text: it cannot keep the line byte for byte (analyze says so on
    the same line, tests/cli/test_unkeepable_lines.py)."""
    text = "0 1 * * * /opt/bin/caf\udce9\n0 2 * * * /opt/bin/ok\n"
    for force in (False, True):
        jobs, actions, _ = run(tmp_path, text, force=force)
        assert list(jobs) == ["ok"]
        [(line, detail)] = refused(actions).items()
        assert line == 1 and detail.startswith("byte 0xE9 (column 23) is not UTF-8")
        assert detail.endswith("--force cannot register it)")


def test_env_lines_that_are_not_utf8_refuse_the_lines_below_them(tmp_path: Path) -> None:
    """TOML holds text only: the env (HOME, SHELL, …) of such a line cannot be kept."""
    crontab = tmp_path / "c"
    crontab.write_bytes(b"0 1 * * * /opt/bin/a\nHOME=/srv/caf\xe9\n0 2 * * * /opt/bin/b\n")
    result = generate_registry([str(crontab)], tmp_path / "r.toml", file_format="user")
    assert [(a.status, a.line) for a in result.actions] == [(NEW, 1), (REFUSED, 3)]
    assert result.refused[0].detail.startswith("the env line HOME= above it (line 2)")
    assert not result.skipped


def test_a_cron_tz_cronie_cannot_read_is_refused_too() -> None:
    line = parse_crontab("CRON_TZ=Mars/Olympus\n0 1 * * * /x\n", "x", cron="cronie").jobs[0]
    refusal = entry_zone(line, "x", CRONIE, "UTC", given=False)
    assert isinstance(refusal, Refusal)
    assert "CRON_TZ=Mars/Olympus is not a zone cronie knows, so it runs" in refusal.reason
    assert "--cron cronie" not in refusal.remedy


@pytest.mark.slow
def test_merging_grows_linearly_with_the_crontab(tmp_path: Path) -> None:
    """New and known lines are found by key, never by a scan of the registry: 8x the lines
    cost about 8x the work (a scan per line would cost 64x). Work is counted in Python
    function calls (cProfile's count, the same on a loaded machine), never timed."""
    import cProfile
    import pstats

    from migrate_cron.registry import Source
    from migrate_cron.registry.proposal import GeneratedJob
    from migrate_cron.registry.writer import merge

    def jobs(n: int) -> list[GeneratedJob]:
        path = str(tmp_path / f"c{n}")
        return [
            GeneratedJob(
                name=f"job-{i}",
                command=f"/opt/bin/job-{i}",
                schedule=f"{i % 60} * * * *",
                timezone="UTC",
                sources=(Source(path, i + 1, f"{i % 60} * * * * /opt/bin/job-{i}"),),
            )
            for i in range(n)
        ]

    def calls(n: int) -> int:
        proposed = jobs(n)
        profile = cProfile.Profile()
        profile.enable()
        text, _ = merge(None, proposed, [], tmp_path, crontab_lines=crontab_lines)
        merge(text, proposed, [], tmp_path, crontab_lines=crontab_lines)
        profile.disable()
        return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]

    calls(100)  # imports and caches
    small, large = calls(500), calls(4000)
    assert large < 12 * small, (small, large)
