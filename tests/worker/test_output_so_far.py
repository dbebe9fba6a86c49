"""A running command's output reaches its job row at the heartbeat, before the run ends; the
finish overwrites it; the size is the finish's bound."""

from __future__ import annotations

from pathlib import Path

from migrate_cron.store import Store
from migrate_cron.store.models import Job
from migrate_cron.worker.inflight import Ledger
from migrate_cron.worker.runner import Tail
from tests.worker.helpers import make_job, registry, start_worker, wait_for

#: Waits for the gate file at most this long (0.05 s x 1200), so a failed test leaves no
#: command behind for long.
GATE_LOOP = "i=0; while [ ! -e gate ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done"


def _job(store: Store, job_id: int) -> Job:
    job = store.get(job_id)
    assert job is not None
    return job


def test_output_so_far_is_on_the_row_while_the_command_runs(store: Store, tmp_path: Path) -> None:
    reg = registry(
        {"talky": {"command": f"echo first; echo oops >&2; {GATE_LOOP}; echo second",
                   "cwd": str(tmp_path)}}
    )  # fmt: skip
    job_id = store.enqueue("talky").job_id
    tw = start_worker(store, reg, worker_id="w-talk", concurrency=1, heartbeat=0.2, lease=5.0)
    try:
        mid = wait_for(
            lambda: "oops" in ((j := _job(store, job_id)).output or "") and j,
            30,
            what="the output so far on the row",
        )
        assert mid.state == "running" and mid.locked_by == "w-talk"
        assert mid.output == "first\n[stderr]\noops\n"
        (tmp_path / "gate").touch()
        done = wait_for(lambda: (j := _job(store, job_id)).state == "done" and j, 30)
    finally:
        (tmp_path / "gate").touch()
        tw.stop()
    assert done.output == "first\nsecond\n[stderr]\noops\n"


def test_output_so_far_keeps_the_finishs_bound(store: Store, tmp_path: Path) -> None:
    reg = registry(
        {"flood": {"command": f"head -c 100000 /dev/zero | tr '\\0' x; echo; {GATE_LOOP}",
                   "cwd": str(tmp_path)}}
    )  # fmt: skip
    job_id = store.enqueue("flood").job_id
    tw = start_worker(store, reg, concurrency=1, heartbeat=0.2, lease=5.0, output_cap=1024)
    try:
        mid = wait_for(lambda: "98977 bytes" in ((j := _job(store, job_id)).output or "") and j, 30)
        assert mid.state == "running"
        assert mid.output is not None and len(mid.output) < 1100
        assert mid.output.startswith("[… 98977 bytes dropped]\n")
    finally:
        (tmp_path / "gate").touch()
        tw.stop()


def test_only_new_output_is_taken_and_an_unstored_one_again() -> None:
    ledger = Ledger()
    ledger.add([make_job(1), make_job(2)])
    slot = ledger.start(1)
    assert not isinstance(slot, str)
    out, err = Tail(64), Tail(64)
    slot.output.watch(out, err)
    assert ledger.outputs_so_far([1, 2]) == {}  # nothing printed; job 2 not started
    out.add(b"a\n")
    assert ledger.outputs_so_far([1, 2]) == {1: "a\n"}
    assert ledger.outputs_so_far([1]) == {1: "a\n"}  # not stored yet: taken again
    ledger.outputs_stored([1])
    assert ledger.outputs_so_far([1]) == {}
    err.add(b"e\n")
    assert ledger.outputs_so_far([1]) == {1: "a\n[stderr]\ne\n"}
