"""One job, several origins: how ``generate registry`` merges a second host into a registry
that knew one, how a re-run after a partial switch keeps everything, and what the registry
accepts for ``[[jobs.NAME.sources]]`` / ``[[jobs.NAME.migrations]]``."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from migrate_cron.errors import ConfigError
from migrate_cron.migration import switch
from migrate_cron.migration.generation import generate_registry
from migrate_cron.migration.target import Target
from migrate_cron.registry import load_registry, parse_registry
from migrate_cron.registry.proposal import JOINED, KEPT, NEW, SWITCHED

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
LINE = b"*/5 * * * * /usr/local/bin/import-orders\n"


def _crontab(tmp_path: Path, host: str, extra: bytes = b"") -> Path:
    path = tmp_path / f"{host}.crontab"
    path.write_bytes(b"# " + host.encode() + b"\n" + extra + LINE)
    return path


def test_a_second_host_joins_the_job_a_first_run_made(tmp_path: Path) -> None:
    registry = tmp_path / "migrate-cron.toml"
    web1 = _crontab(tmp_path, "web1")
    web2 = _crontab(tmp_path, "web2", b"MAILTO=other@example.com\n")
    first = generate_registry([f"web1:{web1}"], registry, file_format="user")
    assert [(a.name, a.status) for a in first.actions] == [("import-orders", NEW)]
    target = Target("/usr/bin/migrate-cron", str(registry), "sqlite:////tmp/q.db")
    (done,) = switch.migrate(registry, "import-orders", "enqueue", target, NOW, file_format="user")
    assert done.origin == "web1:web1.crontab"
    assert "[jobs.import-orders.migration]" in registry.read_text()

    second = generate_registry([f"web1:{web1}", f"web2:{web2}"], registry, file_format="user")
    assert [(a.name, a.status) for a in second.actions] == [
        ("import-orders", SWITCHED),
        ("import-orders", JOINED),
    ]
    spec = load_registry(registry).get("import-orders")
    assert [s.label for s in spec.sources] == ["web1:web1.crontab", "web2:web2.crontab"]
    # The switch made while the job had one origin now names that origin.
    assert [m.origin for m in spec.migrations] == ["web1:web1.crontab"]
    assert spec.migration_of(spec.sources[1]) is None

    third = generate_registry([f"web1:{web1}", f"web2:{web2}"], registry, file_format="user")
    assert [a.status for a in third.actions] == [SWITCHED, KEPT]
    assert not third.written

    results = switch.migrate(registry, "import-orders", "enqueue", target, NOW, file_format="user")
    assert [r.origin for r in results] == ["web2:web2.crontab"]
    before = {p: p.read_bytes() for p in (web1, web2)}
    assert all(b"enqueue import-orders" in data for data in before.values())
    switch.rollback(registry, "import-orders")
    assert web1.read_bytes() == b"# web1\n" + LINE
    assert web2.read_bytes() == b"# web2\nMAILTO=other@example.com\n" + LINE
    table = tomllib.loads(registry.read_text())["jobs"]["import-orders"]
    assert table["mode"] == "cron" and "migrations" not in table and "migration" not in table


def test_a_line_twice_in_one_file_stays_two_jobs(tmp_path: Path) -> None:
    """Two identical lines in one file are not two hosts: cron runs both there, and a
    rewrite could not tell them apart, so they stay separate (and migrate refuses them)."""
    registry = tmp_path / "migrate-cron.toml"
    path = tmp_path / "crontab"
    path.write_bytes(LINE + LINE)
    result = generate_registry([path], registry, file_format="user")
    # The second is an exact copy: named as one in words, never with a counter.
    assert [a.name for a in result.actions] == ["import-orders", "import-orders-copy"]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"source": {"file": "a", "line": 1, "text": "t"}, "sources": []},
            "not both",
        ),
        (
            {
                "sources": [
                    {"file": "a", "line": 1, "text": "t", "host": "w1"},
                    {"file": "a", "line": 2, "text": "t", "host": "w1"},
                ]
            },
            "two origins in w1:a",
        ),
        (
            {
                "sources": [{"file": "a", "line": 1, "text": "t", "host": "w1"}],
                "migrations": [
                    {
                        "origin": "w9:a",
                        "previous_mode": "cron",
                        "crontab": "a",
                        "line": "x",
                        "switched_at": NOW,
                    }
                ],
            },
            "none of the job's sources",
        ),
    ],
)
def test_registry_origins_are_checked(table: dict[str, object], message: str) -> None:
    job = {"command": "true", "schedule": "* * * * *", **table}
    with pytest.raises(ConfigError, match=message):
        parse_registry({"jobs": {"j": job}})


def test_force_on_a_line_changed_on_one_host_splits_it_off(tmp_path: Path) -> None:
    """The other hosts still run the old line: the job keeps their command, and the changed
    line becomes a job of its own (never a silent change of what web1 runs)."""
    registry = tmp_path / "migrate-cron.toml"
    web1, web2 = _crontab(tmp_path, "web1"), _crontab(tmp_path, "web2")
    generate_registry([f"web1:{web1}", f"web2:{web2}"], registry, file_format="user")
    web2.write_bytes(b"# web2\n*/5 * * * * /usr/local/bin/import-orders --v2\n")
    kept = generate_registry([f"web1:{web1}", f"web2:{web2}"], registry, file_format="user")
    assert kept.conflicts and not kept.written
    generate_registry([f"web1:{web1}", f"web2:{web2}"], registry, file_format="user", force=True)
    reg = load_registry(registry)
    # The changed line is told apart by its option (--v2), not by a counter.
    old, new = reg.get("import-orders"), reg.get("import-orders-v2")
    assert (old.command, [s.label for s in old.sources]) == (
        "/usr/local/bin/import-orders",
        ["web1:web1.crontab"],
    )
    assert (new.command, new.source and new.source.label) == (
        "/usr/local/bin/import-orders --v2",
        "web2:web2.crontab",
    )
