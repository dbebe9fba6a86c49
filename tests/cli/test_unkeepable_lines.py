"""``analyze`` and ``generate registry`` name the same lines the registry cannot hold — bytes
that are not UTF-8 (in the line or in an env line above it), a command longer than ``sh -c``
can be given — with ``FILE:LINE`` and the same reason; ``generate`` writes the other lines and
exits 1, with or without ``--force``. Never a line dropped in silence (issue 30, item 9). Run
from the installed command."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.crontab.line_limits import MAX_COMMAND_BYTES
from tests.conftest import cli_path

HUGE = "x" * (1024 * 1024)
CRONTAB = (
    b"MAILTO=ops@example.com\n"
    b"5 * * * * /usr/local/bin/good-one.sh\n"
    b"10 * * * * echo caf\xe9 > /tmp/menu.txt\n"
    b"15 * * * * echo " + HUGE.encode() + b"\n"
    b"20 * * * * /usr/local/bin/good-two.sh\n"
    b"LANG=fran\xe7ais\n"
    b"25 * * * * /usr/local/bin/below-the-env-line.sh\n"
)
#: line → the rule analyze reports on it
EXPECTED = {3: "syntax/not-utf8", 4: "syntax/command-too-long", 7: "syntax/env-not-utf8"}


def run(*args: str, cwd: Path) -> tuple[int, str, str]:
    """The installed command; its output decoded as a terminal would keep it (bytes that are
    not UTF-8 come back as they were written)."""
    done = subprocess.run(
        [cli_path(), *args], capture_output=True, cwd=cwd, timeout=120, check=False
    )
    decode = lambda b: b.decode("utf-8", "surrogateescape")  # noqa: E731
    return done.returncode, decode(done.stdout), decode(done.stderr)


@pytest.fixture
def crontab(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.crontab"
    path.write_bytes(CRONTAB)
    return path


def analyzed(crontab: Path) -> dict[int, dict[str, Any]]:
    code, out, err = run(
        "analyze", crontab.name, "--json", "--tz", "UTC", "--fail-on", "never", cwd=crontab.parent
    )
    assert code == 0 and "Traceback" not in err, err
    return {
        entry["line"]: finding
        for entry in json.loads(out)["entries"]
        for finding in entry["findings"]
        if finding["rule"] in EXPECTED.values()
    }


def test_analyze_reports_each_line_the_registry_cannot_hold(crontab: Path) -> None:
    found = analyzed(crontab)
    assert {line: f["rule"] for line, f in found.items()} == EXPECTED
    assert found[3]["message"].startswith("byte 0xE9 (column 20) is not UTF-8")
    assert found[4]["severity"] == "error"  # cron never ran it either: E2BIG
    assert f"{MAX_COMMAND_BYTES:,} bytes" in found[4]["message"]
    assert "LANG= above it (line 6)" in found[7]["message"]
    # The table says it too, file and line, and exits 1 on the error.
    code, out, err = run("analyze", crontab.name, "--tz", "UTC", cwd=crontab.parent)
    assert code == 1 and "Traceback" not in err
    flat = " ".join(out.split())
    assert "error syntax/command-too-long — jobs.crontab line 4" in flat
    assert "warning syntax/not-utf8 — jobs.crontab lines 3, 6" in flat
    assert "warning syntax/env-not-utf8 — jobs.crontab line 7" in flat


@pytest.mark.parametrize("force", [False, True])
def test_generate_refuses_the_same_lines_with_the_same_reason(crontab: Path, force: bool) -> None:
    registry = crontab.parent / "migrate-cron.toml"
    options = ["--force"] if force else []
    code, out, err = run(
        "generate", "registry", crontab.name, "-o", registry.name, "--tz", "UTC", "--json",
        *options, cwd=crontab.parent,
    )  # fmt: skip
    assert code == 1, err
    assert "Traceback" not in err
    refused = {a["line"]: a["detail"] for a in json.loads(out)["jobs"] if a["status"] == "refused"}
    assert sorted(refused) == sorted(EXPECTED)
    for line, finding in analyzed(crontab).items():
        assert refused[line].startswith(finding["message"]), (line, refused[line])
        assert "--force cannot register it" in refused[line]
        assert f"jobs.crontab:{line}: not registered: {finding['message'][:40]}" in err
    jobs = tomllib.loads(registry.read_text())["jobs"]
    assert [j["source"]["line"] for j in jobs.values()] == [2, 5]
    assert json.loads(out)["skipped"] == []


def test_a_nul_byte_is_named_by_analyze_and_refused_by_generate(tmp_path: Path) -> None:
    """A NUL byte in a job line or an env line: generate skipped such lines with exit 0 and
    analyze said nothing (issue 30, items 7 and 9); now both name them, with the same words."""
    crontab = tmp_path / "nul.crontab"
    crontab.write_bytes(
        b"5 * * * * /usr/local/bin/good-one.sh\n"
        b"10 * * * * echo a\x00b\n"
        b"FOO=x\x00y\n"
        b"20 * * * * /usr/local/bin/below-the-env-line.sh\n"
    )
    code, out, err = run(
        "analyze", crontab.name, "--json", "--tz", "UTC", "--fail-on", "never", cwd=tmp_path
    )
    assert code == 0 and "Traceback" not in err, err
    found = {
        entry["line"]: finding
        for entry in json.loads(out)["entries"]
        for finding in entry["findings"]
        if "nul-byte" in finding["rule"]
    }
    assert {line: f["rule"] for line, f in found.items()} == {
        2: "syntax/nul-byte",
        4: "syntax/env-nul-byte",
    }
    assert found[2]["message"].startswith("a NUL byte (column 18)")
    assert found[4]["message"].startswith("the env line FOO= above it (line 3) holds a NUL byte")

    code, out, err = run(
        "generate", "registry", crontab.name, "-o", "migrate-cron.toml", "--tz", "UTC", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 1 and "Traceback" not in err, err
    refused = {a["line"]: a["detail"] for a in json.loads(out)["jobs"] if a["status"] == "refused"}
    assert sorted(refused) == [2, 4]
    for line, finding in found.items():
        assert refused[line].startswith(finding["message"]), (line, refused[line])
        assert f"nul.crontab:{line}: not registered: {finding['message'][:40]}" in err
    jobs = tomllib.loads((tmp_path / "migrate-cron.toml").read_text())["jobs"]
    assert [j["source"]["line"] for j in jobs.values()] == [1]
