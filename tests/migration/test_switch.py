from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.errors import UsageError
from migrate_cron.migration import switch
from migrate_cron.migration.crontab_file import crontab_lines
from migrate_cron.migration.line_switch import AlreadyThere, Refused, SwitchResult
from migrate_cron.migration.target import Target
from migrate_cron.registry import load_registry, parse_registry

from .helpers import FakeInstaller, job, write_registry

NOW = datetime(2025, 3, 1, 9, 12, tzinfo=UTC)


def migrate(*args: Any, **kwargs: Any) -> SwitchResult:
    """These crontabs are user crontabs whose place does not say so: say it, as a user would
    with --format user (tests/cli/test_migrate.py covers the refusal)."""
    kwargs.setdefault("file_format", "user")
    results = switch.migrate(*args, **kwargs)
    assert len(results) == 1  # these jobs have one origin each
    return results[0]


def rollback(*args: Any, **kwargs: Any) -> SwitchResult:
    results = switch.rollback(*args, **kwargs)
    assert len(results) == 1
    return results[0]


CRONTAB = (
    b"# shop\nMAILTO=ops@example.com\n\n"
    b"30 2 * * * cd /srv && php artisan invoices:export%a\\%b\n"
    b"*/5 * * * * php artisan orders:poll >/dev/null 2>&1"
)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Target]:
    crontab = tmp_path / "shop.crontab"
    crontab.write_bytes(CRONTAB)
    registry = tmp_path / "migrate-cron.toml"
    write_registry(
        registry,
        [
            job(
                crontab,
                4,
                "30 2 * * * cd /srv && php artisan invoices:export%a\\%b",
                "cd /srv && php artisan invoices:export",
                "30 2 * * *",
                name="invoices-export",
            ),
            job(
                crontab,
                5,
                "*/5 * * * * php artisan orders:poll >/dev/null 2>&1",
                "php artisan orders:poll >/dev/null 2>&1",
                "*/5 * * * *",
                name="orders-poll",
            ),
        ],
        [crontab],
    )
    target = Target("/opt/mc/bin/migrate-cron", str(registry), "sqlite:////var/lib/q.db")
    return crontab, registry, target


def test_migrate_to_enqueue_rewrites_one_line_and_the_mode(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    result = migrate(registry, "invoices-export", "enqueue", target, NOW)
    assert result.written and result.line == 4 and result.backup
    lines = crontab.read_bytes().split(b"\n")
    assert lines[3] == (
        b"30 2 * * * /opt/mc/bin/migrate-cron enqueue invoices-export --quiet --registry "
        + str(registry).encode()
        + b" --database-url sqlite:////var/lib/q.db"
    )
    assert [ln for i, ln in enumerate(lines) if i != 3] == [
        ln for i, ln in enumerate(CRONTAB.split(b"\n")) if i != 3
    ]
    assert Path(result.backup).read_bytes() == CRONTAB
    spec = load_registry(registry).get("invoices-export")
    assert spec.mode == "enqueue" and spec.migration is not None
    assert spec.migration.previous_mode == "cron" and spec.migration.line == result.after
    assert spec.migration.switched_at == NOW
    assert "-30 2 * * * cd /srv" in result.diff and "+30 2 * * * /opt/mc" in result.diff


def test_rollback_restores_bytes_and_registry(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    before = registry.read_text()
    migrate(registry, "orders-poll", "scheduler", target, NOW)
    assert crontab.read_bytes().endswith(
        b"#[migrate-cron scheduler orders-poll] " + CRONTAB.split(b"\n")[-1]
    )
    migrate(registry, "invoices-export", "enqueue", target, NOW)
    rollback(registry, "orders-poll")
    rollback(registry, "invoices-export")
    assert crontab.read_bytes() == CRONTAB
    # tomlkit may leave one blank line where the last job's [migration] table was
    assert registry.read_text().rstrip("\n") == before.rstrip("\n")


def test_dry_run_changes_nothing(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    before = registry.read_bytes()
    result = migrate(registry, "invoices-export", "enqueue", target, NOW, dry_run=True)
    assert not result.written and result.diff
    assert crontab.read_bytes() == CRONTAB and registry.read_bytes() == before
    assert not (registry.parent / ".migrate-cron").exists()


def test_a_line_edited_since_generation_is_refused_showing_both(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    edited = CRONTAB.replace(b"invoices:export", b"invoices:export --all")
    crontab.write_bytes(edited)
    before = registry.read_bytes()
    with pytest.raises(Refused) as err:
        migrate(registry, "invoices-export", "enqueue", target, NOW)
    msg = str(err.value)
    assert "changed since the registry was generated" in msg
    assert "registry: 30 2 * * * cd /srv && php artisan invoices:export%a" in msg
    assert "file:     30 2 * * * cd /srv && php artisan invoices:export --all" in msg
    assert "generate registry" in msg and "--force" in msg
    assert crontab.read_bytes() == edited and registry.read_bytes() == before


def test_a_moved_line_is_found_by_its_text(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    crontab.write_bytes(b"# new comment\n" + CRONTAB)
    result = migrate(registry, "invoices-export", "enqueue", target, NOW)
    assert result.line == 5 and "moved" in result.notes[0]
    rollback(registry, "invoices-export")
    assert crontab.read_bytes() == b"# new comment\n" + CRONTAB


def test_switch_between_modes_and_roll_back_to_cron(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    migrate(registry, "invoices-export", "enqueue", target, NOW)
    migrate(registry, "invoices-export", "scheduler", target, NOW)
    spec = load_registry(registry).get("invoices-export")
    assert spec.mode == "scheduler" and spec.migration and spec.migration.previous_mode == "cron"
    with pytest.raises(AlreadyThere):
        migrate(registry, "invoices-export", "scheduler", target, NOW)
    rollback(registry, "invoices-export")
    assert crontab.read_bytes() == CRONTAB
    with pytest.raises(AlreadyThere):
        rollback(registry, "invoices-export")


def test_install_checks_the_installed_crontab_first(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    stale = FakeInstaller(installed=b"* * * * * something else\n")
    with pytest.raises(Refused, match="crontab -l >"):
        migrate(registry, "invoices-export", "enqueue", target, NOW, install=True, installer=stale)
    assert crontab.read_bytes() == CRONTAB and not stale.calls
    fake = FakeInstaller(installed=CRONTAB)
    migrate(registry, "invoices-export", "enqueue", target, NOW, install=True, installer=fake)
    assert fake.installed == crontab.read_bytes() != CRONTAB
    rollback(registry, "invoices-export", installer=fake)  # installed before: installs again
    assert fake.installed == CRONTAB == crontab.read_bytes()


def test_a_failed_install_undoes_both_files(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    before = registry.read_bytes()
    fake = FakeInstaller(installed=CRONTAB, fail_install=True)
    with pytest.raises(Exception, match="refused"):
        migrate(registry, "invoices-export", "enqueue", target, NOW, install=True, installer=fake)
    assert crontab.read_bytes() == CRONTAB and registry.read_bytes() == before


def test_system_crontabs_are_not_installed(tmp_path: Path) -> None:
    crontab = tmp_path / "shop"
    crontab.write_bytes(b"30 2 * * * www-data php artisan x\n")
    registry = tmp_path / "migrate-cron.toml"
    write_registry(
        registry,
        [
            job(
                crontab,
                1,
                "30 2 * * * www-data php artisan x",
                "php artisan x",
                "30 2 * * *",
                user="www-data",
                name="x",
            )
        ],
        [crontab],
    )
    target = Target("/mc", str(registry))
    with pytest.raises(UsageError, match="system crontab"):
        migrate(registry, "x", "enqueue", target, NOW, install=True)
    migrate(registry, "x", "enqueue", target, NOW, file_format="system")
    assert crontab.read_bytes() == (
        b"30 2 * * * www-data /mc enqueue x --quiet --registry " + str(registry).encode() + b"\n"
    )


def test_crontab_mode_and_owner_are_kept(setup) -> None:  # type: ignore[no-untyped-def]
    crontab, registry, target = setup
    crontab.chmod(0o640)
    migrate(registry, "invoices-export", "enqueue", target, NOW)
    assert crontab.stat().st_mode & 0o777 == 0o640
    assert not [p for p in crontab.parent.iterdir() if p.name.endswith("~")]


def test_registry_stays_valid_and_keeps_comments(setup) -> None:  # type: ignore[no-untyped-def]
    _crontab, registry, target = setup
    registry.write_text("# keep me\n" + registry.read_text())
    migrate(registry, "invoices-export", "enqueue", target, NOW)
    text = registry.read_text()
    assert text.startswith("# keep me\n")
    parse_registry(tomllib.loads(text))


def test_generate_after_a_switch_keeps_switched_jobs(setup) -> None:  # type: ignore[no-untyped-def]
    from migrate_cron.registry.proposal import SWITCHED
    from migrate_cron.registry.writer import merge

    from .helpers import job

    crontab, registry, target = setup
    migrate(registry, "invoices-export", "enqueue", target, NOW)
    migrate(registry, "orders-poll", "scheduler", target, NOW)
    text = registry.read_text()
    again = [
        job(
            crontab,
            4,
            crontab.read_text().splitlines()[3],
            "x enqueue invoices-export",
            "30 2 * * *",
        ),
    ]
    new_text, actions = merge(
        text, again, [str(crontab)], registry.parent, crontab_lines=crontab_lines
    )
    assert new_text == text
    assert {(a.name, a.status) for a in actions} == {
        ("invoices-export", SWITCHED),
        ("orders-poll", SWITCHED),
    }
