"""``migrate-cron generate migration`` from the installed command: offline DDL for all five
dialects, JSON output, and usage errors."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.generate.revision import SCHEMA_VERSION, revision_id
from tests.conftest import run_cli

PARTIAL = "CREATE INDEX mc_job_claim_idx ON mc_job (run_at, id) WHERE state = 'open'"
COMPOSITE = "CREATE INDEX mc_job_claim_idx ON mc_job (state, run_at, id)"
EXPECTED = {
    "postgresql": [PARTIAL, "payload JSONB", "run_at TIMESTAMP WITH TIME ZONE NOT NULL"],
    "sqlite": [PARTIAL, "id INTEGER NOT NULL", "run_at DATETIME NOT NULL"],
    "mysql": [COMPOSITE, "run_at DATETIME(6) NOT NULL", "AUTO_INCREMENT"],
    "mariadb": [COMPOSITE, "run_at DATETIME(6) NOT NULL", "AUTO_INCREMENT"],
    "mssql": [COMPOSITE, "run_at DATETIME2(6) NOT NULL", "IDENTITY", "GO"],
}


@pytest.mark.parametrize("dialect", sorted(EXPECTED))
def test_sql_prints_the_revision_ddl_for_each_dialect(dialect: str, tmp_path: Path) -> None:
    result = run_cli(
        "generate",
        "migration",
        "--sql",
        "--dialect",
        dialect,
        "--table-prefix",
        "mc_",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    ddl = result.stdout
    assert f"revision {revision_id('mc_')}" in ddl.splitlines()[0]
    for table in ("mc_job", "mc_scheduled_runs", "mc_job_leases", "mc_side_effects"):
        assert f"CREATE TABLE {table} (" in ddl
    for fragment in EXPECTED[dialect]:
        assert fragment in ddl
    other = COMPOSITE if PARTIAL in EXPECTED[dialect] else PARTIAL
    assert other not in ddl
    assert ddl.count("mc_job_claim_idx") == 1
    assert "CONSTRAINT mc_job_kind_ref_key UNIQUE (kind, ref)" in ddl
    assert list(tmp_path.iterdir()) == []  # --sql writes nothing


def test_json_describes_the_written_revision(tmp_path: Path) -> None:
    result = run_cli("generate", "migration", "--init", "db/migrations", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["revision"] == revision_id("", 1)
    assert data["down_revision"] is None
    assert data["head"] == revision_id("")
    assert [r["down_revision"] for r in data["revisions"]] == [None] + [
        revision_id("", v) for v in range(1, SCHEMA_VERSION)
    ]
    assert data["tables"] == [
        "job",
        "scheduled_runs",
        "job_leases",
        "side_effects",
        "job_attempts",
        "job_workers",
        "job_actions",
        "job_tallies",
        "job_trend_periods",
    ]
    assert Path(data["path"]).is_file()
    assert Path(data["path"]).parent == tmp_path / "db" / "migrations" / "versions"
    assert "def include_object" in data["include_object"]
    assert "script_location = %(here)s/db/migrations" in (tmp_path / "alembic.ini").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sql",), "--sql and --dialect go together"),
        (("--dialect", "postgresql"), "--sql and --dialect go together"),
        (("--sql", "--dialect", "oracle"), "oracle"),
        (("--table-prefix", "x-y"), "not a valid identifier"),
        (("--head", "a", "--branch-label", "b"), "pick one"),
        (("--init", "m", "--directory", "m"), "leave out --directory"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = run_cli("generate", "migration", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_names_the_options() -> None:
    result = run_cli("generate", "migration", "--help")
    assert result.returncode == 0
    for option in ("--init", "--sql", "--dialect", "--head", "--branch-label", "--table-prefix"):
        assert option in result.stdout
    group = run_cli("generate", "--help")
    assert group.returncode == 0
    assert "migration" in group.stdout


# -- generate registry ---------------------------------------------------------------------


def _registry(
    tmp_path: Path, text: str, *args: str, keep: bool = False
) -> tuple[int, str, dict[str, Any]]:
    """Run ``generate registry`` on one crontab holding ``text`` into a new registry (or the
    last one, ``keep``): exit code, stderr on one line, and the registry's jobs."""
    crontab = tmp_path / "jobs.crontab"
    crontab.write_bytes(text.encode("utf-8", "surrogateescape"))
    out = tmp_path / "out.toml"
    if not keep:
        out.unlink(missing_ok=True)
    result = run_cli(
        "generate", "registry", str(crontab), "-o", str(out), *args,
        cwd=tmp_path, env={"HOME": str(tmp_path)},
    )  # fmt: skip
    assert "Traceback" not in result.stderr
    jobs = tomllib.loads(out.read_text()).get("jobs", {}) if out.exists() else {}
    return result.returncode, " ".join(result.stderr.split()), jobs


def test_registry_reads_the_files_as_the_chosen_cron(tmp_path: Path) -> None:
    line = "~7 3 * * * /opt/bin/nightly-digest\n"  # a random minute: cronie's, not Debian's
    code, err, jobs = _registry(tmp_path, line)
    assert code == 1 and "not valid crontab syntax" in err and not jobs
    code, err, jobs = _registry(tmp_path, line, "--cron", "cronie")
    assert code == 0, err
    assert [j["command"] for j in jobs.values()] == ["/opt/bin/nightly-digest"]
    code, err, _ = _registry(tmp_path, line, "--cron", "vixie")
    assert code == 2 and "--cron" in err


def test_registry_reads_a_copied_system_crontab_without_format(tmp_path: Path) -> None:
    """No --format, a path that says nothing: the lines `schedule USER /path` decide."""
    text = (
        "20 4 * * * factorio /srv/factorio/bin/save-world\n"
        "50 4 * * * factorio /srv/factorio/bin/prune --days 14\n"
        "0 5 * * 0 root /usr/sbin/service factorio restart\n"
    )
    code, err, jobs = _registry(tmp_path, text)
    assert code == 0, err
    assert [(j["user"], j["command"].split()[0]) for j in jobs.values()] == [
        ("factorio", "/srv/factorio/bin/save-world"),
        ("factorio", "/srv/factorio/bin/prune"),
        ("root", "/usr/sbin/service"),
    ]
    code, err, jobs = _registry(tmp_path, "0 1 * * * php /srv/app/cron.php\n")
    assert code == 0, err
    [job] = jobs.values()
    assert "user" not in job and job["command"] == "php /srv/app/cron.php"


def test_registry_refuses_a_line_that_never_worked_with_one_warning_line(tmp_path: Path) -> None:
    text = (
        "HOME=/srv/crm\n"
        "*/10 * * * * ./bin/sync-contacts\n"
        "0 6 * * * /usr/bin/mysqldump crm > /srv/dumps/crm-$(date +%a).sql\n"
    )
    code, _, jobs = _registry(tmp_path, text)
    assert code == 1
    assert list(jobs) == ["sync-contacts"] and jobs["sync-contacts"]["cwd"] == "/srv/crm"
    crontab = tmp_path / "jobs.crontab"
    raw = run_cli("generate", "registry", str(crontab), "-o", str(tmp_path / "x.toml"))
    [warning] = [line for line in raw.stderr.splitlines() if ": not registered: " in line]
    assert warning.startswith(f"{crontab}:3: not registered: cron cuts the command at its first")
    assert warning.endswith(" (use --force to register it anyway)")
    code, err, jobs = _registry(tmp_path, text, "--force")
    assert code == 0, err
    assert sorted(jobs) == ["mysqldump-crm", "sync-contacts"]  # what it dumps


def test_registry_never_moves_a_cron_tz_job_in_silence(tmp_path: Path) -> None:
    text = "CRON_TZ=America/Chicago\n45 7 * * 1-5 /opt/desk/bin/open-tickets\n"
    code, err, jobs = _registry(tmp_path, text)
    assert code == 1 and not jobs
    assert "jobs.crontab:2: not registered: job open-tickets: Debian's cron ignores" in err
    assert "--tz" in err
    code, err, jobs = _registry(tmp_path, text, "--tz", "Europe/Madrid")
    assert code == 0, err
    assert jobs["open-tickets"]["timezone"] == "Europe/Madrid"
    assert "timezone Europe/Madrid for 1 job (" in err and "ignores CRON_TZ" in err
    code, err, jobs = _registry(tmp_path, text, "--cron", "cronie")
    assert code == 0, err
    assert jobs["open-tickets"]["timezone"] == "America/Chicago"
    assert "timezone America/Chicago for 1 job (" in err and "cronie schedules in" in err


def test_registry_json_lists_refused_lines_and_zones(tmp_path: Path) -> None:
    crontab = tmp_path / "jobs.crontab"
    crontab.write_text("0 2 * * * /opt/bin/a\n0 3 * * * /opt/bin/b | tee /tmp/b-$(date +%s)\n")
    result = run_cli(
        "generate", "registry", str(crontab), "-o", str(tmp_path / "r.toml"), "--json",
        "--tz", "UTC",
    )  # fmt: skip
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert [(j["status"], j["line"]) for j in document["jobs"]] == [("new", 1), ("refused", 2)]
    assert document["jobs"][1]["detail"].endswith("(use --force to register it anyway)")
    assert document["timezones"] == [{"zone": "UTC", "reason": "--tz", "lines": [f"{crontab}:1"]}]
