"""How many jobs one claim asks for: fixed with ``--batch``, else learnt from run times.

A claim is a round trip and a commit. For jobs of a few milliseconds that round trip, not the
work, sets the pace: claiming only what the threads can start (``batch = concurrency``) ran
~470 no-op jobs/s on PostgreSQL where ``--batch 100`` ran ~4,600 (measured side by side, see
docs/benchmarks.md). A fixed large batch, though, hoards long jobs: a worker would hold
30-second jobs waiting behind its busy threads while other workers idle.

So by default a worker keeps a moving average of the run time of each kind it runs, and only
kinds known to be short are claimed ahead of the threads (*prefetched*): a waiting batch
should drain within ``drain`` seconds (``batch × slowest short average / concurrency ≤
drain``), up to ``ceiling``; two may wait at once (``capacity``). A kind never seen, or seen
to be long, is claimed only when a thread is free to start it — so four workers and four
ready 30-second jobs give one job each, whatever else the workers ran before. The average is
lopsided on purpose: a run longer than it replaces it at once, a shorter one moves it by
``alpha`` (5 %), so a kind that is usually quick but sometimes long (a report that is empty
most days) stays long: only ~45 quick runs in a row bring a 2.5 s average under 0.25 s — and
no kind is claimed ahead before this worker has seen ``min_runs`` (50) runs of it.
Prefetched jobs are leased and heartbeated like running ones; the guarantees do not change,
only the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A waiting batch drains within this many seconds (far below any lease).
DRAIN_SECONDS = 0.25
#: The largest batch the averages may reach (the tuned ``--batch`` of the benchmarks).
CEILING = 100
#: Runs of a kind seen before it may be claimed ahead: one quick first run must not make a
#: worker claim a hundred jobs of a kind that is sometimes long.
MIN_RUNS = 50
#: Weight of a shorter run time in a kind's moving average; a longer one replaces it at once.
ALPHA = 0.05


@dataclass(frozen=True)
class ClaimPlan:
    """One claim round: take ``now`` jobs of any claimable kind (threads will start them),
    then up to ``ahead`` more of the ``short`` kinds only (they wait in the batch)."""

    now: int
    ahead: int
    short: tuple[str, ...]


class ClaimSize:
    """Batch size, jobs held at once and when to claim again, for the claim loop.

    ``observe`` is called by the runner threads; each update replaces one dict entry (atomic
    in CPython), and a stale read only makes one claim a little larger or smaller.
    """

    def __init__(
        self,
        concurrency: int,
        batch: int | None = None,
        *,
        drain: float = DRAIN_SECONDS,
        ceiling: int = CEILING,
        alpha: float = ALPHA,
        min_runs: int = MIN_RUNS,
    ) -> None:
        self.concurrency = concurrency
        self.fixed = batch
        self.drain = drain
        self.ceiling = max(ceiling, concurrency)
        self.alpha = alpha
        self.min_runs = min_runs
        self.averages: dict[str, float] = {}
        self.runs: dict[str, int] = {}

    @property
    def adaptive(self) -> bool:
        return self.fixed is None

    def observe(self, kind: str, seconds: float) -> None:
        """Fold one run time into its kind's average (ignored with a fixed ``--batch``)."""
        if self.fixed is not None:
            return
        seconds = max(seconds, 0.0)
        self.runs[kind] = self.runs.get(kind, 0) + 1
        previous = self.averages.get(kind)
        if previous is None or seconds >= previous:
            self.averages[kind] = seconds
        else:
            self.averages[kind] = previous + self.alpha * (seconds - previous)

    def short_kinds(self) -> tuple[str, ...]:
        """Kinds whose average lets a batch wait beside the threads."""
        if self.fixed is not None:
            return ()
        return tuple(
            sorted(
                kind
                for kind, average in self.averages.items()
                if average < self.drain and self.runs.get(kind, 0) >= self.min_runs
            )
        )

    @property
    def batch(self) -> int:
        if self.fixed is not None:
            return self.fixed
        short = [self.averages[k] for k in self.short_kinds()]
        if not short:
            return self.concurrency
        slowest = max(short)
        if slowest <= 0:
            return self.ceiling
        fits = int(self.concurrency * self.drain / slowest)
        return max(self.concurrency, min(self.ceiling, fits))

    @property
    def capacity(self) -> int:
        """Jobs held at once, waiting for a thread or running: with a batch no larger than
        the threads, only what they can start; else up to two batches wait beside the running
        jobs. The next claim is sent while a whole batch still waits, so the threads never run
        dry during its round trip (with room for one batch only, they drained it and then
        waited for the claim: 9 % fewer no-op jobs a second, docs/benchmarks.md)."""
        batch = self.batch
        return self.concurrency if batch <= self.concurrency else self.concurrency + 2 * batch

    @property
    def refill_at(self) -> int:
        """Claim again once this many places are free: a whole batch when one waits (fewer,
        fuller claims), else half a batch."""
        batch = self.batch
        return batch if batch > self.concurrency else max(1, batch // 2)

    def plan(self, room: int, free: int, claimable: list[str] | None) -> ClaimPlan:
        """Split ``room`` (places in the ledger) into a claim of any kind for the ``free``
        threads and one ahead of them for the short kinds. A fixed ``--batch`` claims any kind
        for the whole room, as before. ``claimable`` None means any kind."""
        batch = min(self.batch, room)
        if self.fixed is not None:
            return ClaimPlan(batch, 0, ())
        short = self.short_kinds()
        if claimable is not None:
            short = tuple(k for k in short if k in claimable)
            if set(claimable) <= set(short):  # every kind is short: one claim does it all
                return ClaimPlan(batch, 0, ())
        now = max(0, min(free, batch))
        return ClaimPlan(now, batch - now if short else 0, short)
