"""``migrate-cron analyze`` and ``explain``: golden JSON for every sample, exit codes, output.

Golden files live in tests/fixtures/analyze/. After an intended change, regenerate them with
``UPDATE_GOLDEN=1 .venv/bin/pytest tests/cli/test_analyze.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from migrate_cron.cli.app import app
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "analyze"
NOW = "2026-03-01T00:00:00Z"

CASES = {
    "shop": ["samples/shop.crontab", "--durations", "samples/durations.csv"],
    "etc-crontab": ["samples/etc-crontab"],
    "cron.d-shop": ["samples/cron.d-shop"],
    "agency-box": ["samples/agency-box.crontab", "--durations", "samples/durations.csv"],
    "backups": ["samples/backups.crontab"],
    "workers": ["samples/workers.crontab", "--durations", "samples/durations.csv"],
    "nightly-loaders": ["samples/nightly-loaders.crontab"],
    # cronie schedules in CRON_TZ (America/New_York); Debian (the case above) ignores it.
    "nightly-loaders-cronie": ["samples/nightly-loaders.crontab", "--cron", "cronie"],
    "pasted-quartz": ["samples/pasted-quartz.crontab"],
    "no-newline": ["samples/no-newline.crontab"],
    "web-hosts": ["web1:samples/web1.crontab", "web2:samples/web2.crontab"],
}


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_json(case: str) -> None:
    code, out = invoke(
        "analyze", *CASES[case], "--json", "--now", NOW, "--next", "3", "--tz", "Europe/Berlin"
    )
    document = json.loads(out)
    assert code == (1 if document["summary"]["findings"]["error"] else 0)
    document.pop("generator")
    path = GOLDEN / f"{case}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    expected = json.loads(path.read_text())
    assert document == expected, f"{case}: run with UPDATE_GOLDEN=1 and review the diff"


def test_every_sample_has_a_golden_case() -> None:
    samples = {
        p.name
        for p in (ROOT / "samples").iterdir()
        if p.is_file() and ("crontab" in p.name or p.name.startswith("cron.d"))
    }
    covered = {Path(a.split(":")[-1]).name for args in CASES.values() for a in args}
    assert samples <= covered
    assert len(samples) >= 8


def test_json_schema_essentials() -> None:
    _, out = invoke(
        "analyze", "samples/shop.crontab", "--json", "--now", NOW, "--next", "2", "--cron", "cronie"
    )
    doc = json.loads(out)
    assert doc["schema_version"] == 1
    entry = next(e for e in doc["entries"] if e["name"] == "invoices-export")
    for key in (
        "file",
        "line",
        "user",
        "schedule",
        "timezone",
        "command",
        "env",
        "next_runs",
        "findings",
        "recommendation",
        "policy",
        "four_sentences",
    ):
        assert key in entry
    assert entry["line"] == 15
    assert entry["timezone"] == "Europe/Berlin"  # from CRON_TZ in the file (cronie honours it)
    assert len(entry["next_runs"]) == 2
    assert entry["recommendation"]["action"] == "schedule+enqueue"
    percent = next(e for e in doc["entries"] if e["line"] == 24)
    assert percent["stdin"].startswith("Good morning,\nattached")
    assert "100% automatic" in percent["stdin"]


def test_large_documents_are_still_valid_json(tmp_path: Path) -> None:
    crontab = tmp_path / "big"
    crontab.write_text("".join(f"{i % 60} {i % 24} * * * /opt/job-{i}\n" for i in range(500)))
    code, out = invoke("analyze", str(crontab), "--json", "--now", NOW, "--tz", "UTC")
    assert code == 0
    doc = json.loads(out)
    assert len(doc["entries"]) == 500 and doc["summary"]["jobs"] == 500


def test_markdown_for_a_ticket() -> None:
    code, out = invoke("analyze", "samples/shop.crontab", "--markdown", "--now", NOW)
    assert code == 0  # no error: line 24's % body is mail's input on purpose (an info)
    assert out.startswith("# Crontab analysis")
    assert "## `samples/shop.crontab`" in out
    assert "| 15 | `30 2 * * *` at 02:30 every day |" in out
    assert "## Migration order" in out
    assert "Fix: " in out


def test_terminal_output_reads_as_tables_and_fixes() -> None:
    code, out = invoke("analyze", "samples/shop.crontab", "--now", NOW, "--tz", "Europe/Berlin")
    assert code == 0  # warnings and info only: line 24's % body is mail's input on purpose
    assert "samples/shop.crontab — 8 jobs, user format" in out
    assert "fix:" in out and "Summary" in out and "Migrate first" in out


def test_stdin_and_format_option() -> None:
    result = CliRunner().invoke(
        app,
        ["analyze", "-", "--format", "system", "--json", "--now", NOW],
        input="17 * * * * root run-parts /etc/cron.hourly\n",
    )
    doc = json.loads(result.stdout)
    assert doc["files"][0]["format"] == "system"
    assert doc["entries"][0]["user"] == "root"


def test_host_option_labels_files() -> None:
    _, out = invoke(
        "analyze",
        "samples/web1.crontab",
        "samples/web2.crontab",
        "--host",
        "a",
        "--host",
        "b",
        "--json",
        "--now",
        NOW,
    )
    doc = json.loads(out)
    assert [f["host"] for f in doc["files"]] == ["a", "b"]
    assert any(f["rule"] == "duplicate-host" for e in doc["entries"] for f in e["findings"])


def test_system_reads_etc_and_skips_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from migrate_cron.crontab import sources as module

    etc = tmp_path / "crontab"
    etc.write_text("17 * * * * root run-parts /etc/cron.hourly\n")
    cron_d = tmp_path / "cron.d"
    cron_d.mkdir()
    (cron_d / "php").write_text("09,39 * * * * root /usr/lib/php/sessionclean\n")
    (cron_d / "php.dpkg-old").write_text("09 * * * * root /old\n")
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "www-data").write_text("*/5 * * * * php /srv/artisan queue:work\n")
    monkeypatch.setattr(module, "SYSTEM_FILES", (str(etc),))
    monkeypatch.setattr(module, "SYSTEM_DIRS", (str(cron_d),))
    monkeypatch.setattr(module, "SPOOL_DIRS", (str(spool),))
    result = CliRunner().invoke(app, ["analyze", "--system", "--json", "--now", NOW])
    doc = json.loads(result.stdout)
    assert [f["format"] for f in doc["files"]] == ["system", "system", "user"]
    assert len(doc["entries"]) == 3
    assert "php.dpkg-old" in result.stderr


# -- the installed command: exit codes and messages ----------------------------------------


def test_exit_codes_of_the_installed_command(tmp_path: Path) -> None:
    ok = run_cli("analyze", "samples/etc-crontab", "--now", NOW, "--json", cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    failing = run_cli(
        "analyze", "samples/pasted-quartz.crontab", "--fail-on", "error", "--json", cwd=ROOT
    )
    assert failing.returncode == 1
    assert json.loads(failing.stdout)["summary"]["rejected"] == 8
    quiet = tmp_path / "quiet"
    quiet.write_text("30 3 * * * /usr/local/bin/backup-db >> /var/log/backup.log 2>&1\n")
    below = run_cli("analyze", str(quiet), "--fail-on", "info", "--tz", "UTC")
    assert below.returncode == 0, below.stdout  # not one finding, not even info
    infos = run_cli("analyze", "samples/etc-crontab", "--fail-on", "info", cwd=ROOT)
    assert infos.returncode == 1  # its anacron guards are info findings
    missing = run_cli("analyze", "samples/does-not-exist", cwd=ROOT)
    assert missing.returncode == 2
    assert "samples/does-not-exist" in missing.stderr and "No such file" in missing.stderr
    unreadable = tmp_path / "secret"
    unreadable.write_text("0 * * * * x\n")
    unreadable.chmod(0)
    if os.geteuid() != 0:
        denied = run_cli("analyze", str(unreadable))
        assert denied.returncode == 2 and "Permission denied" in denied.stderr
    nothing = run_cli("analyze")
    assert nothing.returncode == 2 and "no crontab given" in nothing.stderr


def test_explain_in_words_with_dst_notes() -> None:
    result = run_cli(
        "explain", "30 2 * * *", "--tz", "Europe/Berlin", "--now", NOW, "--next", "2", "--json"
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["description"] == "at 02:30 every day"
    assert [r["utc"] for r in doc["next_runs"]] == ["2026-03-01T01:30:00Z", "2026-03-02T01:30:00Z"]
    assert any("2026-03-29" in n and "03:00" in n for n in doc["notes"])
    text = run_cli("explain", "*/15 9-17 * * mon-fri", "--now", NOW, "--next", "1")
    assert "every 15 minutes from 09:00 to 17:59 on Monday to Friday" in text.stdout
    assert "Mon 2026-03-02 09:00" in text.stdout


def test_explain_rejects_quartz_with_exit_2() -> None:
    result = run_cli("explain", "0 30 2 * * ?")
    assert result.returncode == 2
    assert "6 fields: looks like a Quartz" in " ".join(result.stderr.split())


# -- exit codes, whole files, flavours -----------------------------------------------------


def test_errors_exit_1_by_default_and_never_opts_out(tmp_path: Path) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text("0 */5 * * * * php /srv/shop/artisan orders:sync\n")
    code, out = invoke("analyze", str(crontab), "--json", "--now", NOW, "--cron", "busybox")
    assert code == 1
    entry = json.loads(out)["entries"][0]
    assert entry["command"] == "* php /srv/shop/artisan orders:sync"
    assert [f["rule"] for f in entry["findings"] if f["severity"] == "error"] == ["syntax/quartz"]
    assert invoke("analyze", str(crontab), "--fail-on", "never", "--now", NOW)[0] == 0
    assert invoke("analyze", "samples/etc-crontab", "--now", NOW)[0] == 0  # no error: exit 0


def test_an_ignored_cron_d_file_shows_no_next_runs(tmp_path: Path) -> None:
    cron_d = tmp_path / "cron.d"
    cron_d.mkdir()
    (cron_d / "backup").write_text(
        "0 2 * * * root /usr/local/bin/backup\n0 3 * * * /usr/local/bin/no-user-field\n"
    )
    code, out = invoke("analyze", str(cron_d / "backup"), "--json", "--now", NOW, "--tz", "UTC")
    assert code == 1
    doc = json.loads(out)
    assert doc["files"][0]["ignored"] is True
    assert doc["entries"][0]["next_runs"] == []
    whole = [f for f in doc["findings"] if f["rule"] == "syntax/file-ignored"]
    assert len(whole) == 1 and whole[0]["line"] == 0 and whole[0]["severity"] == "error"
    code, text = invoke("analyze", str(cron_d / "backup"), "--now", NOW, "--tz", "UTC")
    flat = " ".join(text.split())
    assert "Debian's cron ignores this whole file" in flat and "never: file" in flat
    cronie = invoke("analyze", str(cron_d / "backup"), "--json", "--now", NOW, "--cron", "cronie")
    assert json.loads(cronie[1])["entries"][0]["next_runs"]


def test_a_file_cron_would_reject_among_many_is_an_error(tmp_path: Path) -> None:
    script = tmp_path / "deploy.sh"
    script.write_text("#!/bin/sh\nset -e\nrsync -a build/ /srv/app/\n")
    result = CliRunner().invoke(
        app, ["analyze", "samples/etc-crontab", str(script), "--json", "--now", NOW]
    )
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    (finding,) = [f for f in doc["findings"] if f["rule"] == "syntax/not-a-crontab"]
    assert finding["file"] == str(script) and finding["severity"] == "error"
    assert "cron would reject" in result.stderr


def _big_crontab(path: Path) -> Path:
    """A crontab past ``LONG_INPUT_BYTES`` (the benchmark's generator, ~10,000 lines)."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_analyze
    finally:
        sys.path.remove(str(ROOT / "bench"))
    path.write_text(bench_analyze.generate(10_000))
    from migrate_cron.cli.analyze import LONG_INPUT_BYTES

    assert path.stat().st_size >= LONG_INPUT_BYTES
    return path


def test_a_long_analysis_shows_its_stage_on_a_terminal_s_stderr(tmp_path: Path) -> None:
    """stderr a terminal (util-linux's ``script``), stdout a file: a spinner names the stages
    on stderr and the JSON file is untouched by it."""
    import re
    import shlex
    import subprocess

    from tests.conftest import cli_path

    big = _big_crontab(tmp_path / "big.crontab")
    out = tmp_path / "out.json"
    inner = (
        f"{shlex.quote(cli_path())} analyze {shlex.quote(str(big))} --json --now {NOW} "
        f"--tz UTC --fail-on never > {shlex.quote(str(out))}"
    )
    done = subprocess.run(
        ["script", "-qec", inner, "/dev/null"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout
    terminal = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", done.stdout)
    assert "analysing 10,000 lines" in terminal
    assert "writing JSON for" in terminal
    document = json.loads(out.read_text())
    assert document["summary"]["lines"] == 10_000


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    big = _big_crontab(tmp_path / "big.crontab")
    done = run_cli("analyze", str(big), "--json", "--now", NOW, "--fail-on", "never", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    json.loads(done.stdout)


def test_columns_80_in_a_pipe_stacks_the_table_and_clips_nothing() -> None:
    """COLUMNS chosen by the user is honoured in a pipe too: records, never a cut "Do"."""
    done = run_cli("analyze", "samples/shop.crontab", "--now", NOW, env={"COLUMNS": "80"}, cwd=ROOT)
    assert done.returncode == 0, done.stderr  # the sample has no error finding
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    # Line 12: polls, overlaps, someone waits; nothing shows it hands work over (3 of 4).
    assert "  Do queue · missed: skip · 3/4 sentences" in lines
    assert not [line for line in lines if line.rstrip().endswith("…")]
    # Without COLUMNS a pipe keeps its fixed 140-column table.
    wide = run_cli("analyze", "samples/shop.crontab", "--now", NOW, env={"COLUMNS": ""}, cwd=ROOT)
    assert "┃ Do" in wide.stdout


def test_a_finding_location_is_never_cut_and_relative_under_the_current_directory(
    tmp_path: Path,
) -> None:
    """At 80 columns a long path is folded, not cut with an ellipsis (its line number stays);
    a file under the current directory is shown relative to it, as given to a compiler;
    --json keeps the path as the user gave it."""
    deep = tmp_path / ("d" * 40) / ("e" * 30)
    deep.mkdir(parents=True)
    crontab = deep / "bad.cron"
    crontab.write_text("MAILTO=ops@example.com\n61 * * * * /bin/true\n")
    far = run_cli("analyze", str(crontab), "--now", NOW, env={"COLUMNS": "80"}, cwd=ROOT)
    assert far.returncode == 1, far.stderr
    lines = far.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert not [line for line in lines if "bad.cron" in line and line.rstrip().endswith("…")]
    compact = re.sub(r"\s+", "", far.stdout)
    assert f"syntax/bad-schedule—{crontab}line2" in compact
    near = run_cli("analyze", "bad.cron", "--now", NOW, env={"COLUMNS": "80"}, cwd=deep)
    assert "error syntax/bad-schedule — bad.cron line 2" in near.stdout
    inside = run_cli("analyze", str(crontab), "--now", NOW, env={"COLUMNS": "80"}, cwd=deep)
    assert "error syntax/bad-schedule — bad.cron line 2" in inside.stdout
    as_json = run_cli("analyze", str(crontab), "--json", "--now", NOW, cwd=deep)
    assert {f["file"] for f in json.loads(as_json.stdout)["findings"]} == {str(crontab)}
