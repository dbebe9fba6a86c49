"""The enqueue spool: slots that ``enqueue`` could not write because the database was away.

cron fires a rewritten line once per slot; if the database is down, refusing, or stalled at
that moment, the run must not be lost. ``enqueue`` then writes the slot here (one small JSON
file per (database, job, slot)) and exits 75 (EX_TEMPFAIL), so cron's mail still says
something is wrong; the next ``enqueue`` that reaches the database — on this host, for the same
database and table prefix — first replays every spooled slot. Replays are harmless: the slot
key (job_name, scheduled_for) makes a second write of a slot a no-op.

Files only, no SQL. A file is written to a temporary name, flushed to disk, then renamed into
place (and the directory flushed), so a crash leaves either the whole entry or none. The
directory is 0700 and each file 0600: only the owner reads them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

SPOOL_ENV = "MIGRATE_CRON_SPOOL"
SYSTEM_SPOOL = Path("/var/spool/migrate-cron")
SUFFIX = ".slot.json"


@dataclass(frozen=True)
class SpooledSlot:
    """One slot waiting to be enqueued into the database named by ``target``."""

    job: str
    slot: datetime
    max_attempts: int
    target: str  # the database URL (password masked) and table prefix it belongs to
    spooled_at: datetime
    reason: str
    path: Path

    def as_json(self) -> dict[str, object]:
        return {
            "job": self.job,
            "slot": self.slot,
            "max_attempts": self.max_attempts,
            "target": self.target,
            "spooled_at": self.spooled_at,
            "reason": self.reason,
            "file": str(self.path),
        }


def default_dir(environ: dict[str, str] | None = None) -> Path:
    """``$MIGRATE_CRON_SPOOL``; else /var/spool/migrate-cron when this user can write there;
    else the user's state directory (``$XDG_STATE_HOME`` or ~/.local/state)."""
    env = os.environ if environ is None else environ
    if env.get(SPOOL_ENV):
        return Path(env[SPOOL_ENV])
    if _writable(SYSTEM_SPOOL):
        return SYSTEM_SPOOL
    state = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local/state")
    return Path(state) / "migrate-cron" / "spool"


def _writable(path: Path) -> bool:
    if path.is_dir():
        return os.access(path, os.W_OK | os.X_OK)
    parent = path.parent
    return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)


def target_of(masked_url: str, prefix: str) -> str:
    return f"{masked_url}#{prefix}" if prefix else masked_url


class Spool:
    """A spool directory (created 0700 on first write)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def put(self, job: str, slot: datetime, max_attempts: int, target: str, reason: str) -> Path:
        """Write one slot atomically; the same (target, job, slot) overwrites its own file."""
        import hashlib  # only an outage writes: cron's every-minute call does not pay for
        import tempfile  # these imports (tempfile brings random and shutil)

        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        utc = slot.astimezone(UTC)
        key = hashlib.sha256(f"{target}\n{job}\n{utc.isoformat()}".encode()).hexdigest()[:16]
        name = f"{utc:%Y%m%dT%H%M%S}-{_safe(job)}-{key}{SUFFIX}"
        body = json.dumps(
            {
                "job": job,
                "slot": utc.isoformat(),
                "max_attempts": max_attempts,
                "target": target,
                "spooled_at": datetime.now(UTC).isoformat(),
                "reason": reason,
            },
            ensure_ascii=False,
        ).encode("utf-8")
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".part")
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, body)
            os.fsync(fd)
        finally:
            os.close(fd)
        final = self.directory / name
        os.replace(tmp, final)
        _fsync_dir(self.directory)
        return final

    def entries(self, target: str | None = None) -> list[SpooledSlot]:
        """Spooled slots, oldest slot first; ``target`` keeps only that database's."""
        if not self.directory.is_dir():
            return []
        out = []
        for path in sorted(self.directory.glob(f"*{SUFFIX}")):
            entry = _read(path)
            if entry is not None and (target is None or entry.target == target):
                out.append(entry)
        return sorted(out, key=lambda e: (e.slot, e.job))

    def flush(self, target: str, write: Callable[[SpooledSlot], object]) -> Iterator[SpooledSlot]:
        """Replay this target's slots through ``write`` (which raises when the database is
        away: the rest stay spooled); yields each slot once it is written and removed."""
        for entry in self.entries(target):
            write(entry)
            with contextlib.suppress(FileNotFoundError):  # a concurrent flush removed it
                entry.path.unlink()
            yield entry


def _read(path: Path) -> SpooledSlot | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return SpooledSlot(
            job=str(raw["job"]),
            slot=datetime.fromisoformat(raw["slot"]),
            max_attempts=int(raw["max_attempts"]),
            target=str(raw["target"]),
            spooled_at=datetime.fromisoformat(raw["spooled_at"]),
            reason=str(raw.get("reason", "")),
            path=path,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # half-written files never get this name; anything else is left alone


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
