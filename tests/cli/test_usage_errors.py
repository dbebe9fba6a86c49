"""A command-line mistake is one line on stderr and exit 2, like every other usage error —
not Typer's boxed panel — and still says what was probably meant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("status", "--bogus"), "error: No such option: --bogus"),
        (("statu",), "Did you mean 'status'?"),
        (("jobs", "show", "abc"), "Invalid value for 'job_id'"),
        (("worker", "--concurrency", "0"), "Invalid value for '--concurrency'"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args: tuple[str, ...], said: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert said in lines[0] and "--help`)" in lines[0]
    assert "╭" not in done.stderr and done.stdout == ""


def test_help_and_version_still_exit_0() -> None:
    assert run_cli("--version").stdout.startswith("migrate-cron ")
    for args in (("--help",), ("status", "--help"), ("jobs", "list", "--help")):
        done = run_cli(*args)
        assert done.returncode == 0 and "Usage:" in done.stdout, args


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("status", "--window", "soon"), "--window: 'soon' is not a duration"),
        (("status", "--since", "soon"), "--since: 'soon' is not a duration"),
        (("status", "--window", "0s"), "--window: the window must be longer than 0s"),
        (("metrics", "--since", "-"), "--since: '-' is not a duration"),
        (("status", "--window", "1h", "--since", "2h"), "--since is the old name of --window"),
        (("web", "--window", "0"), "--window: the window must be longer than 0s"),
    ],
)
def test_one_window_option_whose_errors_name_the_flag_typed(
    args: tuple[str, ...], said: str, tmp_path: Path
) -> None:
    """`status`, `metrics` and `web` share `--window` (one meaning, one default: 1h); the old
    `--since` spelling still works, and a mistake names the spelling the user typed."""
    done = run_cli(*args, "--database-url", f"sqlite:///{tmp_path / 'q.db'}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr


def test_the_window_is_one_option_with_one_default_everywhere() -> None:
    for command in ("status", "metrics", "web"):
        shown = " ".join(run_cli(command, "--help").stdout.replace("│", " ").split())
        assert "--window" in shown and "default 1h" in shown, command
        assert "--since" not in shown, command  # the old name works, but is not taught
