"""The format of a crontab file comes from facts (its place, or --format) before votes."""

from __future__ import annotations

from pathlib import Path

from migrate_cron.crontab.file_format import format_from_path
from migrate_cron.crontab.parser import parse_crontab

MUNIN = b"*/5 * * * * munin if [ -x /usr/bin/munin-cron ]; then /usr/bin/munin-cron; fi\n"


def test_a_cron_d_file_is_system_format_even_when_its_user_is_unknown_here(
    tmp_path: Path,
) -> None:
    crond = tmp_path / "cron.d"
    crond.mkdir()
    parsed = parse_crontab(MUNIN, str(crond / "munin"))
    assert parsed.format == "system" and not parsed.format_inferred
    [job] = parsed.jobs
    assert job.user == "munin" and job.command is not None and job.command.startswith("if ")


def test_a_file_elsewhere_is_inferred_and_says_so(tmp_path: Path) -> None:
    parsed = parse_crontab(MUNIN, str(tmp_path / "munin.crontab"))
    assert parsed.format_inferred
    assert parse_crontab(MUNIN, str(tmp_path / "x"), format="system").format_inferred is False


def test_places_that_are_facts() -> None:
    assert format_from_path("/etc/crontab")[0] == "system"  # type: ignore[index]
    assert format_from_path("/etc/cron.d/php")[0] == "system"  # type: ignore[index]
    assert format_from_path("/var/spool/cron/crontabs/www-data")[0] == "user"  # type: ignore[index]
    assert format_from_path("/etc/crontabs/root")[0] == "user"  # type: ignore[index]  # busybox
    assert format_from_path("-")[0] == "user"  # type: ignore[index]
    assert format_from_path("/home/me/my.crontab") is None
