"""The jobs this worker holds a lease on right now: claimed and not yet settled in the database.

Shared by the claim loop (adds), the runner threads (start), the heartbeat (extends every lease
in it), the finisher (removes once written) and shutdown (releases). Its size is bounded by the
worker's capacity; nothing about a job outlives its settlement, so memory stays flat however
many jobs pass through.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

from migrate_cron.store.models import Job
from migrate_cron.worker.cancel import LEASE_LOST, Cancel
from migrate_cron.worker.output_so_far import OutputSoFar

QUEUED = "queued"
RUNNING = "running"
FINISHED = "finished"  # ran; the outcome waits in the finisher's buffer


class Slot:
    __slots__ = ("abandoned", "cancel", "job", "output", "renewed", "state")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.state = QUEUED
        self.cancel = Cancel()
        self.output = OutputSoFar()  # a command's output while it runs (the heartbeat's)
        self.abandoned = False  # given back while its (Python) code still runs
        #: When (monotonic) the claim or heartbeat that last extended this job's lease was
        #: sent; the database's ``locked_until`` is at least this + lease.
        self.renewed = 0.0


class Ledger:
    def __init__(self) -> None:
        self._slots: dict[int, Slot] = {}
        #: Slots of a job claimed again before its previous outcome was settled (a retry
        #: due at once is claimable the moment that outcome is written, before ``settle``):
        #: the next ``settle`` of that id is theirs, not the new claim's.
        self._earlier: dict[int, list[Slot]] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._active = 0  # slots not FINISHED: waiting for a thread or running
        self._room_wanted: tuple[int, int] | None = None  # the claim loop's (room, capacity)
        self._change_waiters = 0

    def __len__(self) -> int:
        with self._cond:
            return len(self._slots) + sum(len(v) for v in self._earlier.values())

    def add(self, jobs: Iterable[Job], sent: float | None = None) -> None:
        """Track claimed jobs; ``sent`` is when the claim was sent (monotonic)."""
        at = time.monotonic() if sent is None else sent
        with self._cond:
            for job in jobs:
                slot = Slot(job)
                slot.renewed = at
                previous = self._slots.get(job.id)
                if previous is not None:
                    self._earlier.setdefault(job.id, []).append(previous)
                self._slots[job.id] = slot
                self._active += 1

    def renewed(self, ids: Iterable[int], sent: float) -> None:
        """The heartbeat sent at ``sent`` extended these jobs' leases."""
        with self._cond:
            for job_id in ids:
                slot = self._slots.get(job_id)
                if slot is not None:
                    slot.renewed = max(slot.renewed, sent)

    def unrenewed(self, before: float) -> list[Slot]:
        """Jobs still to finish whose lease was last extended before ``before``."""
        with self._cond:
            return [
                s
                for s in self._slots.values()
                if s.state != FINISHED and s.renewed < before and not s.cancel.is_set()
            ]

    def ids(self) -> list[int]:
        with self._cond:
            return list(self._slots)

    def outputs_so_far(self, ids: Iterable[int]) -> dict[int, str]:
        """Of these jobs, the running ones that printed more since their last stored output:
        job id → the output so far. ``outputs_stored`` confirms them once written."""
        with self._cond:
            slots = [self._slots.get(i) for i in ids]
        out = {}
        for slot in slots:
            if slot is None or slot.state != RUNNING or slot.cancel.is_set():
                continue
            text = slot.output.take()
            if text is not None:
                out[slot.job.id] = text
        return out

    def outputs_stored(self, ids: Iterable[int]) -> None:
        with self._cond:
            slots = [self._slots.get(i) for i in ids]
        for slot in slots:
            if slot is not None:
                slot.output.confirm()

    def start(self, job_id: int) -> Slot | str:
        """Mark a queued job running and return its slot; or "closed" when the worker is
        shutting down (release it), or "lost" when another worker took it over."""
        with self._cond:
            slot = self._slots.get(job_id)
            if slot is None or slot.cancel.reason == LEASE_LOST:
                return "lost"
            if self._closed:
                return "closed"
            slot.state = RUNNING
            return slot

    def finished(self, job_id: int) -> bool:
        """The job's code returned; False if it was abandoned meanwhile (drop its outcome)."""
        with self._cond:
            slot = self._slots.get(job_id)
            if slot is None or slot.abandoned:
                return False
            slot.state = FINISHED
            self._active -= 1
            self._changed()
            return True

    def settle(self, ids: Iterable[int]) -> None:
        """Forget jobs whose outcome is written (or was not ours to write)."""
        with self._cond:
            for job_id in ids:
                earlier = self._earlier.get(job_id)
                if earlier:
                    slot: Slot | None = earlier.pop(0)
                    if not earlier:
                        del self._earlier[job_id]
                else:
                    slot = self._slots.pop(job_id, None)
                if slot is not None and slot.state != FINISHED:
                    self._active -= 1
            self._changed()

    def close(self) -> None:
        """Stop starting jobs: whatever is still queued will be released."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def running(self) -> list[Slot]:
        with self._cond:
            return [s for s in self._slots.values() if s.state == RUNNING and not s.abandoned]

    def cancel(self, ids: Sequence[int], reason: str, *, hard: bool = False) -> list[Slot]:
        with self._cond:
            slots = [
                self._slots[i] for i in ids if i in self._slots and self._slots[i].state != FINISHED
            ]
        for slot in slots:
            slot.cancel.set(reason, hard=hard)
        return slots

    def abandon(self, slots: Iterable[Slot]) -> list[int]:
        """Give up on slots whose code will not stop; returns the ids to release."""
        out = []
        with self._cond:
            for slot in slots:
                if slot.state == RUNNING and not slot.abandoned:
                    slot.abandoned = True
                    out.append(slot.job.id)
            self._cond.notify_all()
        return out

    def room(self, capacity: int) -> int:
        """How many more jobs to claim: ``capacity`` counts jobs waiting for a thread or
        running. Finished jobs whose outcome is still being written do not count (the next
        claim overlaps that write), but the ledger never holds more than twice ``capacity``."""
        with self._cond:
            return self._room_locked(capacity)

    def wait_for_room(self, room: int, capacity: int, timeout: float) -> None:
        """Block until ``room(capacity) >= room``, or the timeout passes. Only the wake-up
        that makes the room is delivered, not one per finished job."""
        with self._cond:
            self._room_wanted = (room, capacity)
            try:
                self._cond.wait_for(lambda: self._room_locked(capacity) >= room, timeout)
            finally:
                self._room_wanted = None

    def _room_locked(self, capacity: int) -> int:
        return max(0, min(capacity - self._active, 2 * capacity - len(self._slots)))

    def _changed(self) -> None:
        wanted = self._room_wanted
        if self._change_waiters or (wanted and self._room_locked(wanted[1]) >= wanted[0]):
            self._cond.notify_all()

    def wait_change(self, timeout: float) -> None:
        """Block until a job finishes or settles, or the timeout passes."""
        with self._cond:
            self._change_waiters += 1
            try:
                self._cond.wait(timeout)
            finally:
                self._change_waiters -= 1
