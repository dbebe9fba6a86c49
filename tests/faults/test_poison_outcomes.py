"""One unwritable outcome never costs another job its outcome (docs/reliability.md).

A command that prints a NUL byte (PostgreSQL rejects NUL in text) and a handler that returns
or raises a lone surrogate (what ``os.fsdecode`` makes of a non-UTF-8 file name; no driver can
encode it) run in the same claimed batch as 19 fine jobs. Every fine job must run exactly once
(counted by the jobs themselves) and end ``done``; the poison job ends ``done`` or ``failed``
with a readable reason; no log line carries a job's output.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from migrate_cron.store import JobState, Store
from tests.conftest import run_cli
from tests.faults.procs import cli_env

MARKER = "POISON-MARKER-7f3a"
HANDLERS = f'''\
import os


def _count(ctx):
    with open(os.environ["MCT_RESULTS"], "a") as out:
        out.write(f"{{ctx.job_id}}\\n")


def fine(payload, ctx):
    _count(ctx)


def surrogate_result(payload, ctx):
    _count(ctx)
    return "{MARKER} " + os.fsdecode(b"report-\\xff\\xfe.csv")


def surrogate_error(payload, ctx):
    _count(ctx)
    raise RuntimeError("cannot open " + os.fsdecode(b"in-\\xff.csv"))
'''
REGISTRY = f"""\
[jobs.fine]
handler = "poison_jobs:fine"
max_attempts = 3

[jobs.surrogate-result]
handler = "poison_jobs:surrogate_result"
max_attempts = 3

[jobs.surrogate-error]
handler = "poison_jobs:surrogate_error"
max_attempts = 1

[jobs.nul-output]
command = "echo start >> \\"$MCT_RESULTS.cmd\\"; printf '{MARKER} x\\\\000y\\\\n'"
max_attempts = 3
env = {{ MCT_RESULTS = "@RESULTS@" }}
"""


def _run_batch(store: Store, db_url: str, prefix: str, tmp_path: Path, poison: str) -> None:
    (tmp_path / "poison_jobs.py").write_text(HANDLERS)
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY.replace("@RESULTS@", str(tmp_path / "results.txt")))
    results = tmp_path / "results.txt"
    poisoned = store.enqueue(poison, max_attempts=1).job_id
    fine = [store.enqueue("fine").job_id for _ in range(19)]
    env = cli_env(db_url, prefix, registry, MCT_RESULTS=str(results), PYTHONPATH=str(tmp_path))
    proc = run_cli(
        "worker", "--once", "--concurrency", "4", "--batch", "20", "--heartbeat", "1",
        env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = Counter(int(x) for x in results.read_text().split())
    for job_id in fine:
        assert runs[job_id] == 1, f"fine job {job_id} ran {runs[job_id]} times"
        job = store.get(job_id)
        assert job is not None and job.state == JobState.DONE
    bad = store.get(poisoned)
    assert bad is not None and bad.state in (JobState.DONE, JobState.FAILED)
    if bad.state == JobState.FAILED:
        assert bad.last_error, "a failed poison job names its reason"
        bad.last_error.encode("utf-8")  # readable: stored as valid text
    assert MARKER not in proc.stderr and MARKER not in proc.stdout, "job output in the log"


def test_nul_in_a_command_output_poisons_nothing(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    _run_batch(store, db_url, table_prefix, tmp_path, "nul-output")
    assert (tmp_path / "results.txt.cmd").read_text().count("start") == 1


@pytest.mark.parametrize("poison", ["surrogate-result", "surrogate-error"])
def test_a_lone_surrogate_from_a_handler_poisons_nothing(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path, poison: str
) -> None:
    _run_batch(store, db_url, table_prefix, tmp_path, poison)
