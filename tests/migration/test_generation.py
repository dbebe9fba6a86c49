"""``generate registry`` leaves alone what cron never runs."""

from __future__ import annotations

from pathlib import Path

from migrate_cron.migration.generation import generate_registry


def test_lines_of_a_file_debian_ignores_are_skipped_not_generated(tmp_path: Path) -> None:
    cron_d = tmp_path / "cron.d"
    cron_d.mkdir()
    backup = cron_d / "backup"
    # The second line has no user field: Debian's cron ignores the whole file.
    backup.write_text("0 2 * * * root /usr/local/bin/backup\n0 3 * * * /usr/local/bin/prune\n")
    result = generate_registry([str(backup)], tmp_path / "migrate-cron.toml")
    assert not result.actions
    reasons = [s.reason for s in result.skipped]
    assert any("cron ignores this whole file" in r for r in reasons)
    assert any(r.startswith("cron rejects this line") for r in reasons)
