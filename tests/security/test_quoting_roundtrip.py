"""Quotes, ``$()``, backticks, ``%`` and newlines survive generate → migrate → enqueue → run,
interpreted nowhere but where cron would interpret them: in the original command.

The project lives in a directory whose name is itself an attack (quotes, ``$(touch CANARY)``,
backticks, ``%``): it ends up in the rewritten crontab line (``--registry``, the SQLite URL)
and must come out the other end as data. The crontab lines are run twice by a small cron
emulation written here from ``do_command.c`` (not with the project's parser): once as they
were (the reference), and once after ``migrate --to enqueue`` (the line now enqueues; a
worker runs the command from the registry). Both runs must write the same bytes.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from migrate_cron.store import Store
from tests.conftest import cli_path, run_cli
from tests.security.inprocess import invoke

# A directory name cannot hold a "/": its commands touch a canary in HOME (``cd`` alone).
WEIRD_DIR = 'proj it\'s $(cd;touch {name}) `cd;touch {name}` 100% "q" \\x'
CRONTAB = r"""SHELL=/bin/sh
OUT={out}
MSG=it's $HOME "not expanded" `nor this`
* * * * * printf '\%s|\%s\n' "it's" "a \"quoted\" $(echo sub) `echo tick` 100\% done" > "$OUT/1"
* * * * * cat > "$OUT/2"%line one%line 'two' $(touch {canary}) `touch {canary}` \% literal%
* * * * * printf '\%s' "$MSG" > "$OUT/3"
* * * * * printf '\%s\n' "tab	here" \\\% 'semi;colon' "a|b" > "$OUT/4"
"""


def cron_split(text: str) -> tuple[str, str | None]:
    """cron's ``%`` rule (do_command.c): the first unescaped ``%`` ends the command and ``\\%``
    in the command becomes ``%``; in the rest (stdin) ``%`` is a newline, ``\\%`` a ``%``."""
    cmd: list[str] = []
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            if ch == "%":
                cmd[-1] = "%"
            else:
                cmd.append(ch)
            escaped = False
        elif ch == "\\":
            cmd.append(ch)
            escaped = True
        elif ch == "%":
            return "".join(cmd), _stdin(text[i + 1 :])
        else:
            cmd.append(ch)
    return "".join(cmd), None


def _stdin(data: str) -> str:
    out: list[str] = []
    escaped = False
    for ch in data:
        if escaped:
            if ch != "%":
                out.append("\\")
        elif ch == "%":
            ch = "\n"
        escaped = ch == "\\"
        if not escaped:
            out.append(ch)
    if escaped:
        out.append("\\")
    return "".join(out)


def run_like_cron(crontab: str) -> None:
    """Run every job line once, the way cron would: env lines as given (quotes stripped,
    nothing expanded), ``SHELL -c command`` with cron's minimal environment, ``%``-stdin."""
    user = pwd.getpwuid(os.getuid())
    env = {
        "HOME": user.pw_dir,
        "LOGNAME": user.pw_name,
        "PATH": "/usr/bin:/bin",
        "SHELL": "/bin/sh",
    }
    for line in crontab.splitlines():
        assign = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        if assign:
            env[assign.group(1)] = assign.group(2)
            continue
        fields = line.split(None, 5)
        if len(fields) < 6 or line.startswith("#"):
            continue
        command, stdin = cron_split(fields[5])
        subprocess.run(
            [env["SHELL"], "-c", command],
            input=stdin,
            text=True,
            env=env,
            cwd=env["HOME"],
            capture_output=True,
            timeout=60,
            check=False,
        )


@pytest.mark.slow
def test_generate_migrate_enqueue_run_interprets_only_the_original_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite, whose URL then carries the weird path too (the database does not matter
    here: ``test_sql_injection`` stores hostile text on every backend)."""
    canary = tmp_path / "CANARY"
    name = f"mct-canary-{uuid.uuid4().hex[:8]}"
    home_canary = Path(pwd.getpwuid(os.getuid()).pw_dir) / name
    project = tmp_path / WEIRD_DIR.format(name=name)
    project.mkdir()
    monkeypatch.chdir(project)
    try:
        _roundtrip(tmp_path, project, canary)
    finally:
        fired = home_canary.exists()
        home_canary.unlink(missing_ok=True)
    assert not fired, "something interpreted the project path"


def _roundtrip(tmp_path: Path, project: Path, canary: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    crontab = project / "my.cron"
    crontab.write_text(CRONTAB.format(out=out, canary=canary))
    # The reference: what cron itself makes of these lines.
    run_like_cron(crontab.read_text())
    reference = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert sorted(reference) == ["1", "2", "3", "4"]
    assert reference["1"] == b'it\'s|a "quoted" sub tick 100% done\n'
    assert reference["3"] == b'it\'s $HOME "not expanded" `nor this`'
    assert not canary.exists(), "the reference run must not have fired the canary"
    shutil.rmtree(out)
    out.mkdir()

    url = f"sqlite:///{project / 'queue.db'}"  # the queue file sits in the weird directory
    assert invoke("db", "upgrade", "--database-url", url).code == 0
    gen = invoke("generate", "registry", "my.cron", "--tz", "UTC")
    assert gen.code == 0, gen.err
    names = re.findall(r"^\[jobs\.([^\].]+)\]$", (project / "migrate-cron.toml").read_text(), re.M)
    assert len(names) == 4, names
    for name in names:
        r = invoke(
            "migrate",
            name,
            "--to",
            "enqueue",
            "--crontab",
            "my.cron",
            "--format",
            "user",
            "--database-url",
            url,
            "--executable",
            cli_path(),
        )
        assert r.code == 0, r.err
    rewritten = crontab.read_text()
    assert rewritten.count(" enqueue ") == 4
    # Fire the rewritten lines the way cron would: each only enqueues its job …
    run_like_cron(rewritten)
    assert not list(out.iterdir()), "an enqueue line ran the command itself"
    # … and a worker runs the commands from the registry.
    work = run_cli(
        "worker",
        "--once",
        "-r",
        str(project / "migrate-cron.toml"),
        "--database-url",
        url,
        cwd=project,
        timeout=120,
    )
    assert work.returncode == 0, work.stderr
    assert work.stderr.count("outcome=done") == 4, work.stderr
    assert {p.name: p.read_bytes() for p in sorted(out.iterdir())} == reference
    assert not canary.exists(), "something interpreted text that was data"


def test_a_path_with_a_newline_is_refused_not_written_into_a_crontab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "two\nlines"
    project.mkdir()
    (project / "my.cron").write_text("* * * * * /bin/echo hi\n")
    monkeypatch.chdir(project)
    assert invoke("generate", "registry", "my.cron", "--tz", "UTC").code == 0
    before = (project / "my.cron").read_text()
    db = f"sqlite:///{tmp_path / 'q.db'}"
    assert invoke("db", "upgrade", "--database-url", db).code == 0
    r = invoke(
        "migrate",
        "echo-hi",  # the name generate gave `/bin/echo hi`
        "--to",
        "enqueue",
        "--crontab",
        "my.cron",
        "--format",
        "user",
        "--database-url",
        db,
        "--executable",
        cli_path(),
    )
    print(r.err)
    assert r.code in (1, 2), r
    assert "Traceback" not in r.err
    assert "line break" in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert (project / "my.cron").read_text() == before


@pytest.mark.parametrize("backend", ["sqlite"])
def test_registry_commands_with_newlines_run_as_a_script(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    """A hand-written registry command may span lines (TOML allows it; a crontab cannot):
    the shell gets it whole, as a script."""
    out = tmp_path / "lines.txt"
    (tmp_path / "migrate-cron.toml").write_text(
        f'[jobs.multi]\ncommand = """\necho "one $(echo two)" > {out}\n'
        f'echo \'three%\' >> {out}\n"""\n'
    )
    store.enqueue("multi")
    r = run_cli(
        "worker", "--once", "--database-url", db_url, "--table-prefix", table_prefix, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert out.read_text() == "one two\nthree%\n"
