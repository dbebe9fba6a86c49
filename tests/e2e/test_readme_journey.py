"""The README's journey, line by line, from the installed command against the sample crontab:
the names it uses are the ones the generator gives, and every step works as written. Two
documented substitutions only: the crontab file is samples/shop.crontab (the README's
``crontab -l > crontab``), and ``worker`` runs in the background (as in another terminal) with
``--heartbeat 1`` until the journey ends, so the steps after it see a worker running."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
from pathlib import Path

from migrate_cron.store import open_store
from migrate_cron.store.leases import REAPER_LEASE
from tests.conftest import run_cli
from tests.faults.procs import Fleet, wait_for

ROOT = Path(__file__).parents[2]


def journey() -> list[list[str]]:
    """The ``migrate-cron`` lines of the first ``sh`` block under "The journey"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## The journey", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [words[1:] for words in lines if words[:1] == ["migrate-cron"]]


def test_the_readme_journey_runs_as_written(tmp_path: Path, db_url: str, table_prefix: str) -> None:
    shutil.copy(ROOT / "samples" / "shop.crontab", tmp_path / "crontab")
    env = {"MIGRATE_CRON_DATABASE_URL": db_url, "MIGRATE_CRON_TABLE_PREFIX": table_prefix}
    env["TZ"] = "UTC"  # this host's cron runs in the zone the README's --tz names
    steps = journey()
    assert [s[0] for s in steps][:3] == ["analyze", "plan", "generate"], steps
    assert any(s[:2] == ["migrate", "invoices-export"] for s in steps)
    with Fleet(tmp_path) as fleet:
        for args in steps:
            if args == ["worker"]:
                _start_worker(fleet, env, tmp_path, db_url, table_prefix)
                continue
            _step(args, env, tmp_path)
        for proc in fleet.procs:
            proc.signal(signal.SIGTERM)
            assert proc.wait(30) == 0, proc.output()[-2000:]
    assert (tmp_path / "crontab").read_bytes() == (ROOT / "samples" / "shop.crontab").read_bytes()


def _start_worker(fleet: Fleet, env: dict[str, str], cwd: Path, url: str, prefix: str) -> None:
    worker = fleet.start(["worker", "--heartbeat", "1"], {**os.environ, **env}, cwd=cwd)
    store = open_store(url, prefix=prefix)
    try:  # up once it renews the workers' reaper lease (what `verify` reads)
        wait_for(lambda: store.lease_holder(REAPER_LEASE), 60, f"the worker\n{worker.output()}")
    finally:
        store.dispose()


def _step(args: list[str], env: dict[str, str], tmp_path: Path) -> None:
    done = run_cli(*args, env=env, cwd=tmp_path, timeout=120)
    # analyze exits 1 on the sample's error findings (that is what it is for), and generate on
    # the line it does not take for one (line 24, cut at %); nothing else may.
    failing = args[0] == "analyze" or args[:2] == ["generate", "registry"]
    assert done.returncode == 0 or (failing and done.returncode == 1), (
        args,
        done.stdout[-2000:],
        done.stderr[-2000:],
    )
    assert "Traceback" not in done.stderr
