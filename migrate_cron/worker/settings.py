"""The worker's knobs, validated once, with the derived values the loop uses."""

from __future__ import annotations

from dataclasses import dataclass

from migrate_cron.errors import UsageError


@dataclass(frozen=True)
class WorkerSettings:
    """``lease`` defaults to 3 × ``heartbeat``: two heartbeats may be late before another
    worker can take the job over. The reaper runs every ``heartbeat`` seconds (one worker at a
    time), so an expired lease is back to ``open`` within one more heartbeat.

    ``batch`` None (the default) lets the worker size each claim from its run times
    (``worker/claim_size.py``): only what it can start at first and for long jobs, up to 100
    for jobs of milliseconds. A number fixes it.
    """

    concurrency: int = 4
    batch: int | None = None
    lease: float | None = None
    heartbeat: float = 10.0
    grace: float = 30.0
    once: bool = False
    kinds: tuple[str, ...] = ()
    #: Claim every kind, also those this worker cannot run (they fail at once as "not in the
    #: registry"): the catch-all behaviour of old. Off by default: a worker claims only the
    #: kinds it can run, and a kind no worker can run waits (``status --check`` flags its age).
    any_kind: bool = False
    poll: float = 1.0  # longest idle wait between polls (and the PostgreSQL safety poll)
    poll_min: float = 0.05
    flush_interval: float = 0.005  # outcomes are written at least this often …
    flush_max: int = 100  # … or as soon as this many are waiting
    # Bytes of stdout and of stderr kept per run (the tail): both together stay far below the
    # 64 KiB of a MySQL/MariaDB TEXT column.
    output_cap: int = 8 * 1024
    kill_grace: float = 5.0  # SIGTERM → SIGKILL for a command's process group
    outage_cap: float = 30.0  # longest wait between tries while the database is down

    def __post_init__(self) -> None:
        checks = [
            (self.concurrency >= 1, "--concurrency must be at least 1"),
            (self.batch is None or self.batch >= 1, "--batch must be at least 1"),
            (self.heartbeat > 0, "--heartbeat must be a positive number of seconds"),
            (self.grace >= 0, "--grace must be 0 or more seconds"),
            (self.poll > 0, "--poll must be a positive number of seconds"),
            (self.flush_max >= 1 and self.flush_interval >= 0, "bad flush settings"),
        ]
        if self.lease is not None:
            checks.append(
                (
                    self.lease > self.heartbeat,
                    f"--lease ({self.lease:g}s) must be longer than --heartbeat "
                    f"({self.heartbeat:g}s), or a running job would lose its lease",
                )
            )
        for ok, message in checks:
            if not ok:
                raise UsageError(message)

    @property
    def lease_seconds(self) -> float:
        return self.lease if self.lease is not None else 3 * self.heartbeat

    @property
    def reap_interval(self) -> float:
        return self.heartbeat
