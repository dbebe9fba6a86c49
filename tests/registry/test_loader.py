from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from migrate_cron.errors import ConfigError, UnknownJob, UsageError
from migrate_cron.registry import Backoff, load_registry, parse_registry, unknown_job_message

GOOD = """
[defaults]
timezone = "Europe/Berlin"
max_attempts = 3

[jobs.export-invoices]
schedule = "30 2 * * *"
command = "php artisan invoices:export --since=yesterday"
env = { MAILTO = "ops@example.com" }
cwd = "/var/www/shop"
backoff = { base = 5, cap = 600 }
policy = "run-once"
mode = "enqueue"
timeout = 3600
user = "www-data"

[jobs.export-invoices.source]
file = "/etc/cron.d/shop"
line = 12
text = "30 2 * * * www-data php artisan invoices:export --since=yesterday\\n"
user = "www-data"

[jobs.send-mail]
handler = "shop.jobs:send_mail"
timezone = "UTC"
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "migrate-cron.toml"
    p.write_text(text)
    return p


def test_loads_jobs_with_defaults_applied(tmp_path: Path) -> None:
    reg = load_registry(write(tmp_path, GOOD))
    job = reg.get("export-invoices")
    assert job.timezone == "Europe/Berlin" and job.max_attempts == 3
    assert job.backoff == Backoff(5.0, 600.0)
    assert job.env == {"MAILTO": "ops@example.com"} and job.timeout == 3600.0
    assert job.source is not None and job.source.line == 12 and job.source.user == "www-data"
    mail = reg.get("send-mail")
    assert mail.handler == "shop.jobs:send_mail" and mail.command is None
    assert mail.timezone == "UTC" and mail.schedule is None
    assert [j.name for j in reg.scheduled()] == ["export-invoices"]


def test_unknown_job_lists_known_ones(tmp_path: Path) -> None:
    reg = load_registry(write(tmp_path, GOOD))
    with pytest.raises(UnknownJob, match="export-invoices, send-mail") as raised:
        reg.get("nope")
    assert "did you mean" not in str(raised.value) and raised.value.exit_code == 2
    with pytest.raises(UnknownJob, match="did you mean 'export-invoices'"):
        reg.get("export-invoice")


def test_unknown_job_among_many_lists_a_few_and_counts_the_rest() -> None:
    names = [f"report-{i:02d}" for i in range(21)] + ["import-orders"]
    message = unknown_job_message("import-order", "r.toml", names)
    assert "; did you mean 'import-orders'? (known jobs: " in message
    assert "import-orders, report-00, report-01" in message and message.endswith("and 14 more)")
    assert "report-20" not in message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[jobs.a]\ncommand = "x"\npolicy = "sometimes"\n', "job 'a': key 'policy'"),
        ('[jobs.a]\ncommand = "x"\nmax_attempts = "3"\n', "key 'max_attempts': must be an integer"),
        ('[jobs.a]\nschedule = "* * * * *"\n', "set exactly one of 'command' or 'handler'"),
        ('[jobs.a]\ncommand = "x"\ntimezone = "Mars/Olympus"\n', "unknown timezone"),
        ('[jobs.a]\ncommand = "x"\nschedule = "61 * * * *"\n', "key 'schedule'"),
        ('[jobs.a]\ncommand = "x"\ncolour = "red"\n', "unknown key 'colour'"),
        ('[jobs.a]\ncommand = "x"\nbackoff = { base = 10, cap = 1 }\n', "cap must be >= base"),
        ('[jobs."a b"]\ncommand = "x"\n', "names use letters"),
        ("[jobs.a\ncommand = 1\n", "invalid TOML"),
        ('[jobs.a]\ncommand = "x"\ncwd_fallback = "spool"\n', "key 'cwd_fallback': 'spool' is"),
    ],
)
def test_errors_name_file_job_and_key(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as exc:
        load_registry(path)
    assert str(path) in str(exc.value)
    assert message in str(exc.value)


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="generate registry"):
        load_registry(tmp_path / "nope.toml")


def test_a_command_longer_than_linux_passes_to_sh_is_refused_at_load(tmp_path: Path) -> None:
    from migrate_cron.crontab.line_limits import MAX_COMMAND_BYTES

    path = tmp_path / "r.toml"
    path.write_text(f'[jobs.huge]\ncommand = "echo {"x" * MAX_COMMAND_BYTES}"\n')
    with pytest.raises(ConfigError, match="MAX_ARG_STRLEN"):
        load_registry(path)
    path.write_text(f'[jobs.fits]\ncommand = "{"x" * MAX_COMMAND_BYTES}"\n')
    assert load_registry(path).get("fits").command is not None


def test_generate_registry_refuses_a_command_too_long_to_run(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    crontab = tmp_path / "c"
    crontab.write_text(f"* * * * * echo {'x' * 200_000}\n0 1 * * * /bin/true\n")
    proc = run_cli(
        "generate",
        "registry",
        str(crontab),
        "-o",
        str(tmp_path / "r.toml"),
        "--tz",
        "UTC",
        cwd=tmp_path,
    )
    assert "c:1: not registered: the command is 200,005 bytes" in proc.stderr
    assert "MAX_ARG_STRLEN" in proc.stderr and proc.returncode == 1
    assert [j.command for j in load_registry(tmp_path / "r.toml")] == ["/bin/true"]


def test_overlap_promises_one_run_at_a_time() -> None:
    def job(**keys: object) -> dict[str, object]:
        return {"jobs": {"j": {"command": "true", "schedule": "* * * * *", **keys}}}

    assert parse_registry(job()).get("j").max_running is None
    assert parse_registry(job(overlap="skip")).get("j").max_running == 1
    assert parse_registry(job(overlap="wait")).get("j").max_running == 1
    assert parse_registry(job(concurrency=3)).get("j").max_running == 3
    assert parse_registry(job(overlap="skip", concurrency=1)).get("j").max_running == 1
    with pytest.raises(ConfigError, match="keep one of them"):
        parse_registry(job(overlap="skip", concurrency=2))
    with pytest.raises(ConfigError, match="not one of"):
        parse_registry(job(overlap="later"))
    with pytest.raises(ConfigError, match="between 1 and"):
        parse_registry(job(concurrency=0))


TABLE = """
[defaults]
max_attempts = 7

[tables.notifications]
key = "id"
status = "state"
ready = 0
processing = 1
done = 2
failed = 9
order_by = "created_at"
batch = 25
lease = 90
command = "php send.php"
"""


def test_a_table_section_describes_the_table_and_what_runs_per_row() -> None:
    spec = parse_registry(tomllib.loads(TABLE)).table("notifications")
    assert (spec.table, spec.key, spec.status, spec.order_by) == (
        "notifications",
        "id",
        "state",
        "created_at",
    )
    assert (spec.ready, spec.processing, spec.done, spec.failed) == (0, 1, 2, 9)
    assert (spec.batch, spec.lease) == (25, 90.0)
    assert spec.run.command == "php send.php"
    assert spec.run.max_attempts == 7  # [defaults] apply to what runs per row


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("ready = 0", 'ready = "x"\nfoo = 1'), "unknown key(s) ['foo']"),
        (("ready = 0", "ready = 1"), "four different values"),
        (('key = "id"', 'key = "id; drop table x"'), "not a plain SQL name"),
        (('key = "id"\n', ""), "key 'key': missing"),
        (("batch = 25", "batch = 0"), "key 'batch': must be between"),
        (('command = "php send.php"', ""), "table 'notifications': key 'command': set exactly"),
        (("ready = 0", "ready = true"), "must be text or an integer"),
    ],
)
def test_table_errors_name_the_table_and_key(change: tuple[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_registry(tomllib.loads(TABLE.replace(*change)))


def test_unknown_table_suggests_the_closest() -> None:
    registry = parse_registry(tomllib.loads(TABLE))
    with pytest.raises(UnknownJob, match="did you mean 'notifications'") as caught:
        registry.table("notification")
    assert caught.value.exit_code == 2


# ------------------------------------------------------------- one entry's error is its own
TWO = '[jobs.a]\ncommand = "x"\n\n[jobs.b]\ncommand = "y"\nbackoff = 60\n'


def test_a_bad_entry_is_that_entrys_error_in_a_partial_load(tmp_path: Path) -> None:
    path = write(tmp_path, TWO)
    reg = load_registry(path, partial=True)
    assert list(reg.jobs) == ["a"] and list(reg.errors) == ["b"]
    with pytest.raises(ConfigError) as raised:
        reg.get("b")
    assert str(raised.value) == (
        f"{path}:6: job 'b': key 'backoff': must be a table, not 60"
        " (e.g. backoff = { base = 30, cap = 3600 })"
    )
    with pytest.raises(ConfigError, match=f"{path}:6: job 'b'"):
        load_registry(path)  # a strict load (plan, migrate, simulate …) still stops at it


def test_a_chain_to_a_bad_entry_still_loads_and_to_no_entry_does_not(tmp_path: Path) -> None:
    path = write(tmp_path, TWO.replace('command = "x"', 'command = "x"\non_success = ["b"]'))
    assert load_registry(path, partial=True).get("a").on_success == ("b",)
    path = write(tmp_path, TWO.replace('command = "x"', 'command = "x"\non_success = ["zz"]'))
    assert set(load_registry(path, partial=True).errors) == {"a", "b"}


# ---------------------------------------------------- who a job runs as (issue 30, item 6)
NOBODY = """
[jobs.report]
command = "id -un"
{user}
[jobs.report.source]
file = "/etc/cron.d/report"
line = 1
text = "* * * * * nobody id -un"
user = "nobody"
"""


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ("", "key 'user': missing: cron ran the line (/etc/cron.d/report:1) as 'nobody'"),
        ('user = "root"', "key 'user': 'root', but cron ran the line"),
    ],
)
def test_a_job_whose_line_ran_as_a_user_never_runs_as_another(
    tmp_path: Path, user: str, message: str
) -> None:
    path = write(tmp_path, NOBODY.format(user=user))
    with pytest.raises(ConfigError) as raised:
        load_registry(path)
    assert str(raised.value).startswith(f"{path}:") and message in str(raised.value)
    assert load_registry(write(tmp_path, NOBODY.format(user='user = "nobody"'))).get(
        "report"
    ).user == ("nobody")


def test_a_handler_is_the_applications_code_not_the_lines(tmp_path: Path) -> None:
    text = NOBODY.format(user="").replace('command = "id -un"', 'handler = "app.jobs:report"')
    assert load_registry(write(tmp_path, text)).get("report").user is None


# -------------------------------------------- values no process can be started with (item 7)
@pytest.mark.parametrize(
    ("body", "key", "fragment"),
    [
        ('command = "a\\u0000b"', "command", "NUL byte"),
        ('command = "x"\ncwd = "/tmp/\\u0000"', "cwd", "NUL byte"),
        ('command = "x"\nshell = "/bin/\\u0000sh"', "shell", "NUL byte"),
        ('command = "x"\nshell = ""', "shell", "empty"),
        ('command = "x"\nenv = { A = "\\u0000" }', "env", "value of 'A' holds a NUL byte"),
        ('command = "x"\nenv = { "A=B" = "1" }', "env", "variable name 'A=B' cannot be set"),
        ('command = "x"\nenv = { "" = "1" }', "env", "variable name '' cannot be set"),
        ('command = "x"\nsource = { file = "f", line = "3", text = "t" }', "source", "line must"),
        ('command = "x"\nsource = { file = 1, line = 3, text = "t" }', "source", "file must"),
        ('command = "x"\nsource = { file = "f", line = 0, text = "t" }', "source", "line number"),
        ('command = "x"\nsource = { file = "f", line = 3, text = [] }', "source", "text must"),
        (
            'command = "x"\nuser = "a"\nsource = { file = "f", line = 3, text = "t", user = 5 }',
            "source",
            "user must",
        ),
        ('command = "x"\nsource = { file = "f", line = 3, text = "t", host = {} }', "source", ""),
        ('command = "x"\nsource = { file = "f", line = 3, text = "t", colour = 1 }', "source", ""),
        (
            'command = "x"\nmigration = { previous_mode = "cron", crontab = 1, line = "l", '
            "switched_at = 2026-01-01T00:00:00Z }",
            "migration",
            "crontab must be a string",
        ),
    ],
)
def test_values_that_cannot_run_are_refused_at_load_naming_file_line_job_key(
    tmp_path: Path, body: str, key: str, fragment: str
) -> None:
    path = write(tmp_path, f'[jobs.ok]\ncommand = "true"\n\n[jobs.x]\n{body}\n')
    reg = load_registry(path, partial=True)
    assert list(reg.jobs) == ["ok"]
    message = str(reg.errors["x"])
    assert message.startswith(f"{path}:") and f"job 'x': key '{key}': " in message, message
    assert fragment in message
    assert int(message.split(":")[1]) >= 4  # the entry's own line, not the file's first


def test_find_entry_answers_for_its_own_kind_only(tmp_path: Path) -> None:
    """Fan-out's reading of the registry (issue 30, item 4): a kind without an entry is None
    whatever another entry holds, a kind with one gets it, and its own error is its own."""
    from migrate_cron.registry import EntryError, find_entry

    path = tmp_path / "migrate-cron.toml"
    path.write_text(
        '[jobs.a]\ncommand = "true"\nmax_attempts = 7\n\n'
        '[jobs.b]\ncommand = "true"\nbackoff = 60\n\n'
        '[jobs.c]\ncommand = "true"\n[jobs.c.source]\nfile = 1\n'
    )
    assert find_entry(path, "orders") is None
    spec = find_entry(path, "a")
    assert spec is not None and spec.max_attempts == 7
    with pytest.raises(EntryError, match=r"migrate-cron.toml:7: job 'b': key 'backoff'"):
        find_entry(path, "b")
    # Not sure from the text alone (a key/value before the first table): the whole file is
    # parsed, partially — still only the kind's own entry can fail it.
    path.write_text('# top\n"jobs".x = { command = "true" }\n' + path.read_text())
    assert find_entry(path, "orders") is None
    assert find_entry(path, "x") is not None
