"""Every command's ``--help`` ends with examples, and every example names a real command and
real options (an example that fails when pasted is worse than none)."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
import typer.main

from migrate_cron.cli.app import app
from migrate_cron.cli.help_text import EXAMPLES, PANELS, plain_types
from tests.conftest import run_cli


def commands(group: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf command by its path (``jobs list``); Typer's groups have ``commands``."""
    out: dict[str, Any] = {}
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            out.update(commands(cmd, f"{prefix}{name} "))
        else:
            out[f"{prefix}{name}"] = cmd
    return out


def test_every_command_has_examples_that_name_real_options() -> None:
    every = commands(typer.main.get_command(app))
    for path, cmd in every.items():
        own = "Example" in (cmd.help or "")
        assert own or path in EXAMPLES, f"{path}: no examples in --help"
    for path, lines in EXAMPLES.items():
        assert path in every, f"examples for a command that does not exist: {path}"
        options = {o for p in every[path].params for o in (*p.opts, *p.secondary_opts)}
        for line in lines:
            words = shlex.split(line.split("|")[-1])
            assert words[:1] == ["migrate-cron"] and " ".join(words[1:]).startswith(path), line
            for word in words:
                flag = word.split("=")[0]
                if flag.startswith("--"):
                    assert flag in options, f"{line}: {path} has no {flag}"


def test_every_top_level_command_is_in_a_journey_panel() -> None:
    root = typer.main.get_command(app)
    listed = [cmd for cmds in PANELS.values() for cmd in cmds]
    assert sorted(listed) == sorted(root.commands), set(listed) ^ set(root.commands)


PYTHON_TYPES = r"<(?:bool|list\[[^>]*\])>"


def test_help_shows_what_to_type_not_python_types(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``<bool>`` beside a flag (``--help`` included), no ``<list[...]>``: every command's
    help as ``main()`` builds it, at 80 columns."""
    monkeypatch.setenv("COLUMNS", "80")
    root = typer.main.get_command(app)
    plain_types(root)
    for path in ["", *commands(root)]:
        with pytest.raises(SystemExit) as stop:  # --help exits 0 after printing
            root.main([*path.split(), "--help"], prog_name="migrate-cron")
        assert stop.value.code in (0, None), path
        shown = capsys.readouterr().out
        assert "--help" in shown, path
        assert re.findall(PYTHON_TYPES, shown) == [], path


@pytest.mark.parametrize("path", ["", "worker", "jobs retry"])
def test_the_installed_command_shows_the_same(path: str) -> None:
    result = run_cli(*path.split(), "--help", env={"COLUMNS": "80"}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "--help" in result.stdout and re.findall(PYTHON_TYPES, result.stdout) == []
    if path == "worker":
        assert "<str>..." in result.stdout  # --kinds may be given more than once
