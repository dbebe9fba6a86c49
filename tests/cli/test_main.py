"""The entry point's garbage-collector handling: off for the cron line's short life, on for
every other command, and left as it was found when ``main`` returns (in-process callers)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from migrate_cron.cli import main as entry


@pytest.fixture(autouse=True)
def _restore_gc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "argv", ["migrate-cron", "status"])
    yield
    gc.unfreeze()
    gc.enable()


def test_the_lean_path_runs_without_the_cyclic_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def lean(argv: list[str]) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr("migrate_cron.cli.lean.run", lean)
    with pytest.raises(SystemExit) as exit_:
        entry.main()
    assert exit_.value.code == 0
    assert seen == [False]
    assert gc.isenabled()  # as found


def test_every_other_command_runs_with_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    monkeypatch.setattr("migrate_cron.cli.lean.run", lambda argv: None)
    monkeypatch.setattr("migrate_cron.cli.app.main", lambda: seen.append(gc.isenabled()))
    entry.main()
    assert seen == [True]
    assert gc.isenabled()


def test_a_caller_that_turned_the_collector_off_finds_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr("migrate_cron.cli.lean.run", lambda argv: None)
    monkeypatch.setattr("migrate_cron.cli.app.main", lambda: seen.append(gc.isenabled()))
    gc.disable()
    entry.main()
    assert seen == [False]
    assert not gc.isenabled()
