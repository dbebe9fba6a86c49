"""The long-running scheduler process: lead or stand by, tick, sleep until the next slot.

Guarantees:
- It sleeps until the earliest due slot (no fixed polling), but wakes at least every lease
  renewal interval so a leader keeps its lease and a standby notices a dead leader.
- Only the lease holder ticks. On gaining leadership it reloads every job's last slot from the
  database, so slots missed between the old leader's death and the takeover go through each
  job's policy (or are on time, within misfire_grace).
- A database outage is logged and retried with capped exponential backoff; leadership is
  dropped and state reloaded afterwards. Writes are idempotent, so a half-done tick is simply
  done again.
- ``stop`` (set by SIGTERM/SIGINT) ends the loop after the current tick; the lease is released
  so a standby takes over at once.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from migrate_cron.clock import Clock, FakeClock
from migrate_cron.errors import DatabaseUnavailable
from migrate_cron.scheduler.leader import Leadership
from migrate_cron.scheduler.log import SchedulerLog
from migrate_cron.scheduler.scheduler import RunEvent, Scheduler
from migrate_cron.scheduler.warp import jumps, real_seconds

#: A standby, or a leader with nothing due, still wakes this often (real seconds).
MAX_IDLE = 60.0
#: While pauses are read, a sleeping scheduler wakes this often to see a resume (seconds).
PAUSE_POLL = 5.0


@dataclass
class LoopResult:
    ticks: int = 0
    events: list[RunEvent] = field(default_factory=list)
    led: bool = False
    outages: int = 0


@dataclass
class SchedulerLoop:
    scheduler: Scheduler
    leadership: Leadership | None
    clock: Clock
    stop: threading.Event = field(default_factory=threading.Event)
    once: bool = False
    until: datetime | None = None
    backoff_initial: float = 1.0
    backoff_max: float = 30.0
    keep_events: bool = False
    log: SchedulerLog = field(default_factory=SchedulerLog)
    freeze_gc: bool = False
    #: Reads the pauses (``migrate-cron pause``): job names and ``@scheduler``.
    pauses: Callable[[], Mapping[str, str]] | None = None
    _announced: bool = field(default=False, init=False, repr=False)
    _scheduler_paused: bool = field(default=False, init=False, repr=False)

    def run(self) -> LoopResult:
        result = LoopResult()
        backoff = self.backoff_initial
        try:
            while not self.stop.is_set():
                try:
                    leading = self._lead()
                    if leading:
                        result.led = True
                        if not self._read_pauses():
                            self._tick(result)
                    backoff = self.backoff_initial
                except DatabaseUnavailable as exc:
                    result.outages += 1
                    self.scheduler.loaded = False
                    if self.leadership is not None:
                        self.leadership.drop()
                    if self.once:
                        raise
                    self.log.event("outage", str(exc), retry_in=round(backoff, 1))
                    self.stop.wait(backoff)
                    backoff = min(backoff * 2, self.backoff_max)
                    continue
                if self.once or self._past_until():
                    break
                self._wait(leading)
        finally:
            self._release()
        return result

    # ------------------------------------------------------------------ steps
    def _lead(self) -> bool:
        if self.leadership is None:
            return True
        was = self.leadership.is_leader
        leading = self.leadership.ensure()
        if leading and not was:
            self.log.event("leading", holder=self.leadership.holder, ttl=self.leadership.ttl)
            self.scheduler.loaded = False  # the database says where every job stands
        elif not leading and (was or not self._announced):
            why = "lost the lease" if was else "another scheduler holds the lease"
            self.log.event(
                "standby", why, me=self.leadership.holder, leader=self.leadership.leader() or "?"
            )
        self._announced = True
        return leading

    def _tick(self, result: LoopResult) -> None:
        reloading = not self.scheduler.loaded
        events = self.scheduler.tick(keep_going=self._keep_going)
        if reloading and self.freeze_gc and self.scheduler.loaded:
            # 10,000 jobs' schedules and heap live as long as the process: keep them out of
            # the collector's full passes, which otherwise add ~200 ms to an unlucky tick.
            gc.freeze()
        result.ticks += 1
        if self.keep_events:
            result.events.extend(events)
        if events:
            self.log.runs(events)

    def _read_pauses(self) -> bool:
        """Apply the pauses; True while the whole scheduler is paused (no tick)."""
        if self.pauses is None:
            return False
        from migrate_cron.store.leases import SCHEDULER_PAUSE

        found = self.pauses()
        paused = SCHEDULER_PAUSE in found
        if paused != self._scheduler_paused:
            self._scheduler_paused = paused
            if paused:
                self.log.event("paused", f"by {found[SCHEDULER_PAUSE]}: recording no slot")
            else:
                self.log.event("resumed", "missed slots follow each job's policy")
                self.scheduler.loaded = False
        self.scheduler.set_paused(frozenset(found) - {SCHEDULER_PAUSE})
        return paused

    def _keep_going(self) -> bool:
        """Between batches of a long tick: stop when asked to; renew the lease when due; stop
        if it is lost."""
        if self.stop.is_set():
            return False
        return self.leadership is None or self.leadership.ensure()

    def _past_until(self) -> bool:
        return self.until is not None and self.clock.now() >= self.until

    def _wait(self, leading: bool) -> None:
        """Sleep until the next due slot, the next lease renewal/retry, or ``stop``."""
        cap = MAX_IDLE
        if self.pauses is not None:
            cap = min(cap, PAUSE_POLL)  # a resume is seen within this
        if self.leadership is not None:
            cap = min(cap, self.leadership.seconds_until_next_try())
        due = self.scheduler.next_due() if leading else None
        if self.until is not None and (due is None or due > self.until):
            due = self.until if leading else due
        if jumps(self.clock):
            if due is not None and leading:
                assert isinstance(self.clock, FakeClock)
                self.clock.set(max(due, self.clock.now()))
                return
            self.stop.wait(cap)  # a standby replaying time waits for the lease in real time
            return
        if due is not None:
            ahead = (due - self.clock.now()).total_seconds()
            cap = min(cap, max(0.0, real_seconds(self.clock, ahead)))
        if cap > 0:
            self.stop.wait(cap)

    def _release(self) -> None:
        if self.leadership is None or not self.leadership.is_leader:
            return
        try:
            self.leadership.release()
            self.log.event("released", holder=self.leadership.holder)
        except DatabaseUnavailable as exc:  # it will expire on its own
            self.log.event("released", f"could not release the lease ({exc}); it expires")
