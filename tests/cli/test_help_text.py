"""Every command's ``--help`` ends with examples, and every example names a real command and
real options (an example that fails when pasted is worse than none)."""

from __future__ import annotations

import shlex
from typing import Any

import typer.main

from migrate_cron.cli.app import app
from migrate_cron.cli.help_text import EXAMPLES, PANELS


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
