"""Racing schedulers: four scheduler processes and four enqueue producers write the same
slots at the same time, on a clock compressed so that slots fall due several times a second,
while a chaos loop SIGKILLs whoever leads. Exactly one job per slot, no slot missing.

Every writer goes through ``Store.enqueue_run`` / ``enqueue_runs`` and its UNIQUE
``(job_name, scheduled_for)`` key; the leader's lease only saves work.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from migrate_cron.scheduler.leader import DEFAULT_LEASE_NAME
from migrate_cron.store import Store
from tests.faults.procs import Fleet, Proc, cli_env, pacing, wait_for

SPEED = 240.0  # four minutely slots per real second
REAL_SECONDS = 15.0
START = datetime(2026, 2, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
STARTUP = 1.5  # real seconds a scheduler needs to start, so its clock begins near the others'
REGISTRY = """\
[jobs.beat]
command = "true"
schedule = "* * * * *"
mode = "scheduler"
policy = "backfill"
max_backfill = 100000
misfire_grace = 86400
"""
PRODUCER = str(Path(__file__).with_name("slot_producer.py"))


def _holder_pid(store: Store) -> int | None:
    found = store.lease_holder(DEFAULT_LEASE_NAME)
    if found is None or found[1].replace(tzinfo=UTC) < store.db_now():
        return None
    return int(found[0].split(":")[1])


def _scheduler_creations(proc: Proc) -> tuple[list[str], int]:
    """Slots this scheduler logged as created by itself: single ones, and summarised counts."""
    single: list[str] = []
    summarised = 0
    for line in proc.output().splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("event") != "enqueue":
            continue
        if "slot" in event:
            single.append(datetime.fromisoformat(event["slot"].replace("Z", "+00:00")).isoformat())
        else:
            summarised += int(event["count"])
    return single, summarised


@pytest.mark.slow
def test_four_schedulers_and_four_producers_with_leader_kills_make_one_job_per_slot(
    store: Store, db_url: str, table_prefix: str, tmp_path: Path
) -> None:
    registry = tmp_path / "migrate-cron.toml"
    registry.write_text(REGISTRY)
    env = cli_env(db_url, table_prefix, registry)
    anchor = time.time()
    until = START + timedelta(seconds=REAL_SECONDS * SPEED)

    def sim_now(ahead: float = 0.0) -> datetime:
        return START + timedelta(seconds=(time.time() + ahead - anchor) * SPEED)

    def scheduler() -> Proc:
        args = [
            "scheduler",
            "--json-logs",
            "--lease-ttl",
            "1",
            "--now",
            sim_now(STARTUP).isoformat(),
            "--speed",
            str(SPEED),
            "--until",
            until.isoformat(),
        ]
        return fleet.start(args, env, label="scheduler")

    kills: list[int] = []
    # The job is on record (its first slot, START + 1 minute, written as a producer writes it)
    # before anyone starts: a scheduler that led before any producer wrote would find no record
    # and backfill the job's open `misfire_grace` day before START (the documented rule for a
    # new job, not what this race is about).
    assert store.enqueue_run("beat", START + MINUTE).created
    with Fleet(tmp_path) as fleet:
        schedulers = [scheduler() for _ in range(4)]
        producers = [
            fleet.start(
                [PRODUCER, "beat", START.isoformat(), str(anchor), str(SPEED), until.isoformat()],
                env,
                label="producer",
                python=True,
            )
            for _ in range(4)
        ]
        # The chaos loop: kill the leader, start a replacement, wait for someone to lead again.
        while sim_now() < until - timedelta(seconds=2.5 * SPEED):
            leader = wait_for(lambda: _holder_pid(store), 20, "a leader")
            victim = next((s for s in schedulers if s.pid == leader), None)
            assert victim is not None, "the lease holder is none of our schedulers"
            pacing(0.5, 1.5)
            victim.signal(signal.SIGKILL)
            victim.wait(10)
            kills.append(victim.pid)
            schedulers.remove(victim)
            schedulers.append(scheduler())
            # Someone leads again — unless the compressed run reached --until meanwhile (a slow
            # start under load), when every scheduler exits by design and nobody needs to.
            wait_for(
                lambda: _holder_pid(store) not in (None, *kills) or sim_now() >= until,
                20,
                "a new leader",
            )
        for p in [*schedulers, *producers]:
            assert p.wait(REAL_SECONDS + 60) == 0, p.output()[-3000:]
        outputs = {p.pid: p for p in fleet.procs}
    assert len(kills) >= 3
    # Exactly one job and one slot row per minute from the first slot to --until (a leader
    # whose compressed clock overshoots --until may add a few more: still one each, no gap).
    jobs = store.list_jobs(kind="beat", limit=100_000)
    per_slot = Counter(j.scheduled_for for j in jobs)
    last = max(per_slot)
    assert last >= until
    expected = [START + timedelta(minutes=i) for i in range(1, (last - START) // MINUTE + 1)]
    assert sorted(per_slot) == expected, "a slot is missing"
    assert set(per_slot.values()) == {1}, "a slot got two jobs"
    runs = store.runs("beat", limit=100_000)
    assert len(runs) == len(expected)
    assert {r["outcome"] for r in runs} == {"enqueued"}
    assert {r["job_id"] for r in runs} == {j.id for j in jobs}
    # From the writers' side: no slot was reported "created" by two of them.
    created: list[str] = []
    summarised = 0
    for p in outputs.values():
        if p.label == "producer":
            created += [
                json.loads(line)["slot"]
                for line in p.output().splitlines()
                if line.startswith("{") and json.loads(line)["created"]
            ]
        elif p.pid not in kills:
            single, more = _scheduler_creations(p)
            created += single
            summarised += more
    assert len(created) == len(set(created)), "two writers both created one slot"
    assert len(created) + summarised <= len(expected)
    # The last live leader gave the lease up on its way out; only a SIGKILLed one (killed just
    # before the run ended, with no time left for a takeover) cannot, and its lease expires.
    held = store.lease_holder(DEFAULT_LEASE_NAME)
    assert held is None or int(held[0].split(":")[1]) in kills, held
    print(
        f"{store.family}: {len(expected)} slots, {len(kills)} leader kills, "
        f"{len(created) + summarised} creations reported by survivors",
        file=sys.stderr,
    )
