"""Clock skew: workers on hosts whose clocks are two minutes ahead or behind do not steal
leases early, and their own leases are not cut short — every lease is computed on the
database server's clock (``Store.now_sql`` / ``after_sql``), never the worker's.

Worker A has the true clock, B runs 120 s ahead, C 120 s behind (``skewed_cli.py`` shifts
every Python wall clock in its process). Each runs one 8 s job under a lease a few seconds
long, kept alive by heartbeats. B starts first and, renewing it four times a second, keeps
the shared reaper lease: it reaps the others' leases while they run: had it compared
``locked_until`` with its own clock, A's and C's jobs would be expired two minutes early and
run twice. Had C computed its lease on its own clock, its claim would be two minutes in the
past at once and reaped.

Not for SQLite: there the database's clock *is* the host's (one machine, one clock).
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from migrate_cron.store import Store
from migrate_cron.store.leases import REAPER_LEASE
from tests.faults.procs import Fleet, Proc, cli_env, wait_for

SKEW = 120.0
JOB_SECONDS = 12  # long enough that a loaded machine still sees B reap while all run
COMMAND = f'echo "$MIGRATE_CRON_KIND $PPID" >> "$RUNS"; sleep {JOB_SECONDS}'
WRAPPER = str(Path(__file__).with_name("skewed_cli.py"))
# (kind, clock skew, heartbeat, lease)
# B starts first and takes the reaper lease; renewing it every 0.25 s, it keeps it. Its own
# job's lease is the shortest (1.5 s): its reaping runs in a thread of its own, so however long
# a reap takes on a loaded machine, it never delays the renewal of B's own lease.
WORKERS = [("hold-b", SKEW, 0.25, 1.5), ("hold-a", 0.0, 1.0, 3.0), ("hold-c", -SKEW, 1.0, 3.0)]


def _log_skew(proc: Proc) -> float:
    """How far the process's wall clock is off: its first log timestamp vs. now-ish."""
    stamp = re.search(r"^(\S+Z) worker-start", proc.output(), re.M)
    assert stamp, proc.output()
    logged = datetime.fromisoformat(stamp.group(1).replace("Z", "+00:00"))
    return (logged - datetime.now(UTC)).total_seconds()


def _pid(locked_by: str | None) -> int | None:
    return int(locked_by.rsplit(":", 2)[1]) if locked_by else None


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_skewed_worker_clocks_neither_steal_nor_shorten_leases(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.txt"
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(
        "".join(
            f'[jobs.{kind}]\ncommand = {COMMAND!r}\nenv = {{ RUNS = "{runs}" }}\n'
            for kind, *_ in WORKERS
        )
    )
    by_kind: dict[str, Proc] = {}
    leases: dict[str, float] = {}
    with Fleet(tmp_path) as fleet:
        for kind, skew, heartbeat, lease in WORKERS:
            env = cli_env(db_url, table_prefix, registry, MCT_CLOCK_SKEW=str(skew))
            args = [
                "worker",
                "--kinds",
                kind,
                "--concurrency",
                "1",
                "--poll",
                "0.1",
                "--heartbeat",
                str(heartbeat),
                "--lease",
                str(lease),
            ]
            by_kind[kind] = fleet.start([WRAPPER, *args], env, label=kind, python=True)
            leases[kind] = lease
            if kind == "hold-b":
                wait_for(
                    lambda p=by_kind[kind]: _reaper_held_by(store, p.pid),
                    60,
                    "the clock-ahead worker to take the reaper lease",
                )
        for proc in by_kind.values():
            wait_for(lambda p=proc: "worker-start" in p.output(), 60, f"{proc.label} to start")
        # The skew is real: each process logs its own (wrong) wall time.
        assert abs(_log_skew(by_kind["hold-a"])) < 30
        assert _log_skew(by_kind["hold-b"]) > SKEW - 30
        assert _log_skew(by_kind["hold-c"]) < -SKEW + 30
        ids = {kind: store.enqueue(kind).job_id for kind in by_kind}
        for kind, job_id in ids.items():
            wait_for(
                lambda j=job_id: store.get(j).state == "running",  # type: ignore[union-attr]
                30,
                f"{kind} to run",
            )
        # Leases are "database now + lease", whatever the worker's clock says.
        now = store.db_now()
        for kind, job_id in ids.items():
            job = store.get(job_id)
            assert job is not None and job.locked_until is not None
            assert _pid(job.locked_by) == by_kind[kind].pid
            left = (job.locked_until.replace(tzinfo=UTC) - now).total_seconds()
            assert 0 < left <= leases[kind] + 0.5, f"{kind}: lease ends {left:+.1f}s from now"
        # B (two minutes ahead) still reaps while A's and C's jobs run; its reaper lease is on the
        # database clock too.
        # (renewed after ``now``: B took the lease — and reaped — while all three jobs ran.)
        holder = wait_for(
            lambda: _reaper_held_by(store, by_kind["hold-b"].pid, renewed_after=now, ttl=0.25),
            JOB_SECONDS - 1,
            "the fast-heartbeat (clock ahead) worker to hold the reaper lease",
            interval=0.02,
        )
        assert holder <= 0.25 + 0.5, f"reaper lease ends {holder:+.2f}s from now"
        for kind, job_id in ids.items():
            wait_for(
                lambda j=job_id: store.get(j).state == "done",  # type: ignore[union-attr]
                JOB_SECONDS + 20,
                f"{kind} to finish",
            )
        for proc in by_kind.values():
            proc.signal(signal.SIGTERM)
        for proc in by_kind.values():
            assert proc.wait(30) == 0, proc.output()[-2000:]
    # Each job ran once, in the worker that claimed it, in one attempt, and nothing was reaped.
    lines = [line.split() for line in runs.read_text().splitlines()]
    assert Counter(kind for kind, _ in lines) == dict.fromkeys(by_kind, 1)
    for kind, pid in lines:
        assert int(pid) == by_kind[kind].pid
    for job_id in ids.values():
        job = store.get(job_id)
        assert job is not None and (job.state, job.attempts, job.last_error) == ("done", 1, None)
    for proc in by_kind.values():
        assert "reaped" not in proc.output() and "lease-lost" not in proc.output()


def _reaper_held_by(
    store: Store, pid: int, renewed_after: datetime | None = None, ttl: float = 0.0
) -> float | None:
    """Seconds left on the reaper lease if ``pid`` holds it now (and, given ``renewed_after``,
    took or renewed it after that database time), else None."""
    found = store.lease_holder(REAPER_LEASE)
    if found is None or _pid(found[0]) != pid:
        return None
    expires = found[1].replace(tzinfo=UTC)
    if renewed_after is not None and expires - timedelta(seconds=ttl) <= renewed_after:
        return None
    left = (expires - store.db_now()).total_seconds()
    return left if left > 0 else None
