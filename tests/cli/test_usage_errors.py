"""A command-line mistake is one line on stderr and exit 2, like every other usage error —
not Typer's boxed panel — and still says what was probably meant."""

from __future__ import annotations

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
