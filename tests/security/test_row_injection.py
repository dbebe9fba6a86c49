"""A database row cannot make a worker run anything outside the registry.

Anyone who can write to the job table can choose a row's kind and payload, nothing else that
matters: a kind selects a registry entry (or fails the job, running nothing), and the payload
reaches the command as data (``$MIGRATE_CRON_PAYLOAD``) or the handler as a Python value —
never as shell text. A canary file proves nothing was executed: every attack string below
*does* create it when spliced into a shell command line (checked first, so the test cannot
pass by accident).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from migrate_cron.store import Store
from tests.conftest import run_cli

HANDLER = """\
import json
import os


def keep(payload, ctx):
    with open(f"py-{ctx.job_id}.json", "w") as fh:
        json.dump({"payload": payload, "kind": ctx.kind}, fh)
"""


def attacks(canary: Path) -> list[str]:
    c = str(canary)
    return [
        f"; touch {c}",
        f"$(touch {c})",
        f"`touch {c}`",
        f"' ; touch {c} ; '",
        f'" ; touch {c} ; "',
        f"\ntouch {c}\n",
        f"| touch {c}",
        f"&& touch {c}",
        f"${{IFS}}x; touch${{IFS}}{c}",
        f"%\ntouch {c}\n%",
        f"x'\"$(touch {c})\"'",
    ]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    (d / "payload_jobs.py").write_text(HANDLER)
    (d / "migrate-cron.toml").write_text(
        "[jobs.echo-payload]\n"
        "command = '''printf '%s' \"$MIGRATE_CRON_PAYLOAD\" "
        "> \"payload-$MIGRATE_CRON_JOB_ID.json\"'''\n"
        'cwd = "."\n'
        "[jobs.py-payload]\n"
        'handler = "payload_jobs:keep"\n'
    )
    return d


def test_the_attack_strings_do_fire_when_spliced_into_a_shell_line(tmp_path: Path) -> None:
    """The control: each string runs ``touch`` if someone builds a command line from it."""
    for i, attack in enumerate(attacks(tmp_path / "canary")):
        canary = tmp_path / f"canary-{i}"
        text = attack.replace(str(tmp_path / "canary"), str(canary))
        subprocess.run(
            ["/bin/sh", "-c", f"echo {text}"], capture_output=True, timeout=10, check=False
        )
        subprocess.run(
            ["/bin/sh", "-c", f"echo '{text}'"], capture_output=True, timeout=10, check=False
        )
        subprocess.run(
            ["/bin/sh", "-c", f'echo "{text}"'], capture_output=True, timeout=10, check=False
        )
        assert canary.exists(), f"attack {i} ({attack!r}) is not a live attack"


def test_rows_with_hostile_kinds_and_payloads_run_nothing_outside_the_registry(
    store: Store, db_url: str, table_prefix: str, project: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    hostile = attacks(canary)
    unknown = [
        *hostile,
        "os:system",
        "subprocess:run",
        "builtins:exec",
        "migrate_cron.cli.main:main",
        "payload_jobs:keep",
        "../echo-payload",
        "echo-payload ",
        "ECHO-PAYLOAD",
        "echo-payload; touch x",
        f"touch {canary}",
    ]
    payloads: list[Any] = [
        {
            "command": f"touch {canary}",
            "shell": "/bin/bash",
            "cwd": "/",
            "env": {"PATH": "/x"},
            "handler": "os:system",
            "stdin": f"touch {canary}",
            "kind": "echo-payload",
        },
        *hostile,
        [*hostile],
        {a: a for a in hostile},
        None,
        "\x1b[2J ansi é \u2028 line separator",
    ]
    unknown_ids = [store.enqueue(kind, {"command": f"touch {canary}"}).job_id for kind in unknown]
    known_ids = {
        store.enqueue(kind, p, ref=hostile[i % len(hostile)] + kind + str(i)).job_id: (kind, p)
        for kind in ("echo-payload", "py-payload")
        for i, p in enumerate(payloads)
    }
    result = run_cli(
        "worker",
        "--once",
        "--database-url",
        db_url,
        "--table-prefix",
        table_prefix,
        cwd=project,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert not canary.exists(), "a row made the worker execute something"
    assert not list(tmp_path.glob("**/canary*"))
    for job_id in unknown_ids:  # never claimed: no worker can run them, so they wait
        job = store.get(job_id)
        assert job is not None
        assert (job.state, job.attempts) == ("open", 0), job
    for job_id, (kind, payload) in known_ids.items():
        job = store.get(job_id)
        assert job is not None and job.state == "done", job
        # The payload arrived as data, byte for byte (JSON in the environment / a Python value).
        if kind == "echo-payload":
            got = json.loads((project / f"payload-{job_id}.json").read_text())
        else:
            got = json.loads((project / f"py-{job_id}.json").read_text())["payload"]
        assert got == payload
    # A kind with a line break cannot forge log lines: every line starts with a timestamp.
    for line in result.stderr.splitlines():
        assert re.match(r"\d{4}-\d\d-\d\dT", line), line


def test_a_row_cannot_pick_a_handler_by_naming_it(
    store: Store, db_url: str, table_prefix: str, project: Path, tmp_path: Path
) -> None:
    """Only kinds in the registry (or registered with @handler by an imported module) run;
    "module:function" in a kind is just an unknown kind, even for importable functions."""
    canary = tmp_path / "canary"
    ids = [
        store.enqueue(kind, f"touch {canary}").job_id
        for kind in ("os:system", "subprocess:getoutput", "posix:system", "pty:spawn")
    ]
    result = run_cli(  # a catch-all worker claims them: still nothing may run
        "worker",
        "--once",
        "--any-kind",
        "--database-url",
        db_url,
        "--table-prefix",
        table_prefix,
        cwd=project,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert not canary.exists()
    assert {store.get(i).state for i in ids} == {"failed"}  # type: ignore[union-attr]
