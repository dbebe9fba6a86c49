"""`generate registry`, `migrate`, `rollback`, `verify`, `migrations` through the installed
command on SQLite: refusals say what to do next; nothing is interpreted but the original
command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from migrate_cron.crontab.parser import read_crontab
from migrate_cron.registry import load_registry
from tests.conftest import run_cli
from tests.e2e.journey import cron_command, fire_like_cron


@pytest.fixture
def project(tmp_path: Path) -> dict[str, str]:
    return {
        "MIGRATE_CRON_DATABASE_URL": f"sqlite:///{tmp_path / 'q.db'}",
        "MIGRATE_CRON_REGISTRY": str(tmp_path / "migrate-cron.toml"),
        "MIGRATE_CRON_TABLE_PREFIX": "",
        "HOME": str(tmp_path),
    }


def cli(
    env: dict[str, str], cwd: Path, *args: str, code: int = 0
) -> subprocess.CompletedProcess[str]:
    proc = run_cli(*args, env=env, cwd=cwd, timeout=120)
    assert proc.returncode == code, f"{args}: {proc.returncode}\n{proc.stdout}{proc.stderr}"
    assert "Traceback" not in proc.stderr
    return proc


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_every_command_has_help() -> None:
    for args in (
        ("plan",),
        ("generate", "registry"),
        ("migrate",),
        ("rollback",),
        ("verify",),
        ("migrations",),
    ):
        proc = run_cli(*args, "--help")
        assert proc.returncode == 0 and "Usage" in proc.stdout, args


def test_quotes_substitutions_and_percent_survive_to_the_run(
    tmp_path: Path, project: dict[str, str]
) -> None:
    out = tmp_path / "out.txt"
    line = (
        f'* * * * * printf \'[\\%s|\\%s|\\%s|\\%s]\' "it\'s" "$(echo sub)" `echo tick` "100\\%" '
        f"> {out}; cat >> {out}%first line%second \\% line%"
    )
    crontab = write(tmp_path / "my.crontab", f"# mine\nGREETING = 'hi there'\n{line}\n")
    original = crontab.read_bytes()
    parsed = read_crontab(str(crontab)).jobs[0]
    expected_dir = tmp_path / "expected"
    expected_dir.mkdir()
    subprocess.run(  # what cron itself would do with the original line
        ["/bin/sh", "-c", (parsed.shell_command or "").replace(str(out), str(expected_dir / "o"))],
        input=(parsed.stdin or "").encode(),
        check=True,
        timeout=30,
    )
    # analyze calls every bare % an error (percent-split): --force takes the line anyway
    cli(project, tmp_path, "generate", "registry", "my.crontab", "--force")
    [name] = [j.name for j in load_registry(tmp_path / "migrate-cron.toml")]
    cli(project, tmp_path, "db", "upgrade")
    cli(project, tmp_path, "migrate", name, "--crontab", "my.crontab", "--format", "user")
    assert fire_like_cron(cron_command(crontab, name), hosts=2, env=project) == [0, 0]
    cli(project, tmp_path, "worker", "--once")
    assert out.read_bytes() == (expected_dir / "o").read_bytes()
    assert out.read_text() == "[it's|sub|tick|100%]first line\nsecond % line\n"
    cli(project, tmp_path, "rollback", name)
    assert crontab.read_bytes() == original


def test_generate_registry_merges_and_never_renames(
    tmp_path: Path, project: dict[str, str]
) -> None:
    crontab = write(tmp_path / "c", "0 1 * * * /opt/bin/export-orders.sh\n0 2 * * * backup.sh\n")
    cli(project, tmp_path, "generate", "registry", "c")
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        "# ours\n" + registry.read_text().replace('policy = "skip"', 'policy = "run-once"', 1)
    )
    write(crontab, "0 1 * * * /opt/bin/export-orders.sh --all\n0 2 * * * backup.sh\n")
    before = registry.read_bytes()
    proc = cli(project, tmp_path, "generate", "registry", "c", code=1)
    assert "changed" in proc.stderr and "--force" in proc.stderr
    assert "registry: 0 1 * * * /opt/bin/export-orders.sh" in proc.stderr
    assert registry.read_bytes() == before
    cli(project, tmp_path, "generate", "registry", "c", "--force")
    reg = load_registry(registry)
    assert sorted(j.name for j in reg) == ["backup", "export-orders"]
    job = reg.get("export-orders")
    assert job.command == "/opt/bin/export-orders.sh --all" and job.policy == "run-once"
    assert registry.read_text().startswith("# ours\n")


def test_refusals_say_what_to_do(tmp_path: Path, project: dict[str, str]) -> None:
    write(tmp_path / "c", "30 2 * * * /opt/bin/export-invoices\n")
    cli(project, tmp_path, "generate", "registry", "c")
    unknown = cli(project, tmp_path, "migrate", "nope", code=2)
    assert "known jobs: export-invoices" in unknown.stderr
    no_tables = cli(project, tmp_path, "migrate", "export-invoices", code=1)
    assert "db upgrade" in no_tables.stderr and "nothing was changed" in no_tables.stderr
    password = cli(
        project,
        tmp_path,
        "migrate",
        "export-invoices",
        "--database-url",
        "postgresql://app:s3cret@db/app",
        code=2,
    )
    assert "password" in password.stderr and "--url-from-env" in password.stderr
    assert "s3cret" not in password.stderr
    not_switched = cli(project, tmp_path, "rollback", "export-invoices")
    assert "nothing to roll back" in not_switched.stderr
    no_registry = cli(
        {**project, "MIGRATE_CRON_REGISTRY": str(tmp_path / "none.toml")},
        tmp_path,
        "migrate",
        "x",
        code=2,
    )
    assert "generate registry" in no_registry.stderr


def test_url_from_env_writes_no_url(tmp_path: Path, project: dict[str, str]) -> None:
    crontab = write(tmp_path / "c", "30 2 * * * /opt/bin/export-invoices\n")
    cli(project, tmp_path, "generate", "registry", "c")
    cli(project, tmp_path, "db", "upgrade")
    cli(
        project,
        tmp_path,
        "migrate",
        "export-invoices",
        "--url-from-env",
        "--executable",
        "/usr/local/bin/migrate-cron",
    )
    line = crontab.read_text().splitlines()[0]
    assert line.startswith("30 2 * * * /usr/local/bin/migrate-cron enqueue export-invoices")
    assert "--database-url" not in line


def test_install_pipes_to_crontab_after_checking_it(
    tmp_path: Path, project: dict[str, str]
) -> None:
    spool = tmp_path / "spool"
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "crontab").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -l ]; then [ -f "{spool}" ] || {{ echo "no crontab for me" >&2; exit 1; }};'
        f' cat "{spool}"; exit 0; fi\n'
        f'if [ "$1" = - ]; then cat > "{spool}"; exit 0; fi\nexit 2\n'
    )
    (fake / "crontab").chmod(0o755)
    env = {**project, "PATH": f"{fake}:/usr/bin:/bin"}
    crontab = write(tmp_path / "c", "MAILTO=me\n*/5 * * * * /opt/bin/poll-orders\n")
    cli(env, tmp_path, "generate", "registry", "c")
    cli(env, tmp_path, "db", "upgrade")
    refused = cli(env, tmp_path, "migrate", "poll-orders", "--install", code=1)
    assert "no installed crontab" in refused.stderr and "crontab -l >" in refused.stderr
    spool.write_bytes(crontab.read_bytes())
    done = cli(env, tmp_path, "migrate", "poll-orders", "--install")
    assert "installed" in done.stderr
    assert (
        spool.read_bytes() == crontab.read_bytes() and b"enqueue poll-orders" in spool.read_bytes()
    )
    cli(env, tmp_path, "rollback", "poll-orders")
    assert spool.read_bytes() == b"MAILTO=me\n*/5 * * * * /opt/bin/poll-orders\n"


def test_verify_lists_slot_differences_and_dual_execution(
    tmp_path: Path, project: dict[str, str]
) -> None:
    crontab = write(tmp_path / "c", "CRON_TZ=UTC\n30 2 * * * /opt/bin/export-invoices\n")
    cli(project, tmp_path, "generate", "registry", "c")
    ok = json.loads(cli(project, tmp_path, "verify", "export-invoices", "--json").stdout)
    statuses = [c["status"] for c in ok["checks"]]
    assert ok["ok"] and statuses == ["ok", "ok", "ok", "skipped", "skipped"]
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        registry.read_text().replace('schedule = "30 2 * * *"', 'schedule = "30 3 * * *"')
    )
    write(crontab, crontab.read_text() + "0 4 * * * /opt/bin/export-invoices\n")
    bad = cli(project, tmp_path, "verify", "export-invoices", code=1)
    assert "FAIL" in bad.stdout and "cron fires at" in bad.stdout
    assert "c:3 still runs the command" in bad.stdout
    report = json.loads(
        cli(project, tmp_path, "verify", "export-invoices", "--json", code=1).stdout
    )
    assert [c["status"] for c in report["checks"]][:2] == ["fail", "fail"]


def test_migrations_without_a_database_still_lists_jobs(
    tmp_path: Path, project: dict[str, str]
) -> None:
    write(tmp_path / "c", "*/5 * * * * /opt/bin/sync-payments\n0 3 * * * /opt/bin/backup.sh\n")
    cli(project, tmp_path, "generate", "registry", "c")
    cli(project, tmp_path, "db", "upgrade")
    cli(project, tmp_path, "migrate", "sync-payments", "--to", "scheduler", "--format", "user")
    env = {**project, "MIGRATE_CRON_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x"}
    proc = cli(env, tmp_path, "migrations", "--json")
    rows = {r["job"]: r for r in json.loads(proc.stdout)["jobs"]}
    assert rows["sync-payments"]["mode"] == "scheduler" and rows["backup"]["mode"] == "cron"
    assert "no queue numbers" in proc.stderr
    assert (tmp_path / "c").read_text().startswith("#[migrate-cron scheduler sync-payments] */5")


SECRET_URLS = [
    "postgresql://app:S3cret@db/app",
    "postgresql://app:p%40S3cret@db/app",
    "postgresql://app@db/app?password=S3cret",
    "postgresql://app@db/app?PASSWORD=S3cret",
    "postgresql://app@db/app?application_name=x&password=S3cret",
    "postgresql+psycopg://app@db/app?sslpassword=S3cret",
    "postgresql://app@db/app?options=-c%20password%3DS3cret",
    "postgresql://app@db/app?PGPASSWORD=S3cret",
    "mysql+pymysql://app@db/app?passwd=S3cret",
    "mariadb://app@db/app?pwd=S3cret",
    "postgresql://app@db/app?token=S3cret",
]


@pytest.mark.parametrize("url", SECRET_URLS)
def test_migrate_refuses_every_spelling_of_a_secret_in_the_url(
    tmp_path: Path, project: dict[str, str], url: str
) -> None:
    crontab = write(tmp_path / "c", "30 2 * * * /opt/bin/export-invoices\n")
    cli(project, tmp_path, "generate", "registry", "c")
    registry = tmp_path / "migrate-cron.toml"
    before = (crontab.read_bytes(), registry.read_bytes())
    for to in ("enqueue", "scheduler"):
        proc = cli(
            project, tmp_path, "migrate", "export-invoices", "--crontab", "c",
            "--to", to, "--database-url", url, code=2,
        )  # fmt: skip
        assert "secret" in proc.stderr and "--url-from-env" in proc.stderr
        assert "S3cret" not in proc.stderr + proc.stdout
        assert (crontab.read_bytes(), registry.read_bytes()) == before


def test_rollback_refuses_a_migrated_line_that_was_copied(
    tmp_path: Path, project: dict[str, str]
) -> None:
    crontab = write(tmp_path / "c", "30 2 * * * /opt/bin/export-invoices\n")
    cli(project, tmp_path, "generate", "registry", "c")
    cli(project, tmp_path, "db", "upgrade")
    cli(project, tmp_path, "migrate", "export-invoices", "--crontab", "c", "--format", "user")
    migrated = crontab.read_text()
    crontab.write_text(migrated + migrated)  # someone pasted the new line twice
    before = crontab.read_bytes()
    proc = run_cli("rollback", "export-invoices", env=project, cwd=tmp_path, timeout=60)
    assert proc.returncode != 0 and "appears 2 times" in proc.stderr, proc.stderr
    assert crontab.read_bytes() == before
    crontab.write_text(migrated)
    cli(project, tmp_path, "rollback", "export-invoices")
    assert crontab.read_text() == "30 2 * * * /opt/bin/export-invoices\n"


def test_migrate_asks_for_the_format_when_only_the_lines_suggest_it(
    tmp_path: Path, project: dict[str, str]
) -> None:
    crontab = write(tmp_path / "munin.crontab", "*/5 * * * * munin test -x /usr/bin/munin-cron\n")
    cli(project, tmp_path, "generate", "registry", "munin.crontab")
    cli(project, tmp_path, "db", "upgrade")
    [name] = [j.name for j in load_registry(tmp_path / "migrate-cron.toml")]
    before = crontab.read_bytes()
    refused = cli(project, tmp_path, "migrate", name, "--crontab", "munin.crontab", code=2)
    assert "--format" in refused.stderr and "nothing written" in refused.stderr
    assert crontab.read_bytes() == before


def test_a_cron_d_line_of_an_unknown_user_keeps_its_user_field(
    tmp_path: Path, project: dict[str, str]
) -> None:
    crond = tmp_path / "cron.d"
    crond.mkdir()
    crontab = write(crond / "munin", "*/5 * * * * munin test -x /usr/bin/munin-cron\n")
    cli(project, tmp_path, "generate", "registry", str(crontab))
    [spec] = list(load_registry(tmp_path / "migrate-cron.toml"))
    assert spec.user == "munin" and spec.command == "test -x /usr/bin/munin-cron"
    cli(project, tmp_path, "db", "upgrade")
    cli(project, tmp_path, "migrate", spec.name, "--crontab", str(crontab))
    [job] = read_crontab(str(crontab)).jobs
    assert job.user == "munin" and "enqueue" in (job.command or "")


def test_every_rewritten_system_line_keeps_its_user(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from migrate_cron.crontab.parser import parse_crontab
    from migrate_cron.migration.generation import generate_registry
    from migrate_cron.migration.line_switch import AlreadyThere
    from migrate_cron.migration.switch import migrate
    from migrate_cron.migration.target import Target

    samples = Path(__file__).resolve().parents[2] / "samples"
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    checked = 0
    for sample in sorted([*samples.iterdir(), *fixtures.rglob("*")]):
        if not sample.is_file() or sample.suffix in (".json", ".toml", ".sh", ".csv", ".md"):
            continue
        data = sample.read_bytes()
        parsed = parse_crontab(data, str(sample))
        if parsed.format != "system" or not parsed.jobs:
            continue
        work = tmp_path / f"{checked}"
        work.mkdir()
        crontab = work / sample.name
        crontab.write_bytes(data)
        registry = work / "migrate-cron.toml"
        generate_registry([crontab], registry, timezone="UTC")
        target = Target("/usr/bin/migrate-cron", str(registry), "sqlite:////q.db")
        for spec in load_registry(registry):
            try:
                migrate(registry, spec.name, "enqueue", target, datetime.now(UTC),
                        file_format="system")  # fmt: skip
            except AlreadyThere:
                continue
        after = parse_crontab(crontab.read_bytes(), str(crontab), format="system")
        users_before = [j.user for j in parsed.jobs]
        assert [j.user for j in after.jobs] == users_before, sample
        checked += 1
    assert checked >= 2, "no system crontab among the samples and fixtures"


def test_migrate_takes_the_cron_that_reads_the_file(
    tmp_path: Path, project: dict[str, str]
) -> None:
    """--cron as for analyze and generate: the file is read as that cron reads it."""
    crontab = write(tmp_path / "crontab", "~7 3 * * * /opt/bin/nightly-digest\n")
    generate = ("generate", "registry", str(crontab), "--format", "user", "--cron", "cronie")
    cli(project, tmp_path, *generate)
    proc = cli(
        project, tmp_path, "migrate", "nightly-digest", "--dry-run", "--cron", "cronie",
        "--format", "user",
    )  # fmt: skip
    assert "enqueue nightly-digest" in proc.stdout
    cli(project, tmp_path, "migrate", "nightly-digest", "--dry-run", "--cron", "vixie", code=2)


def test_migrate_an_reboot_line_says_it_stays_on_cron(
    tmp_path: Path, project: dict[str, str]
) -> None:
    """generate leaves @reboot lines on cron; migrate says so instead of "no job"."""
    crontab = write(
        tmp_path / "crontab",
        "0 3 * * * /usr/local/bin/backup-db\n"
        "@reboot cd /var/www/shop && php artisan queue:restart\n",
    )
    cli(project, tmp_path, "generate", "registry", str(crontab), "--format", "user")
    proc = cli(project, tmp_path, "migrate", "queue-restart", "--crontab", str(crontab))
    said = " ".join(proc.stderr.split())
    assert "is an @reboot line" in said and "left it on cron on purpose" in said
    assert f"{crontab}:2" in said
    unknown = cli(project, tmp_path, "migrate", "no-such-job", code=2)
    assert "no job 'no-such-job'" in unknown.stderr
