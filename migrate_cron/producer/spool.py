"""The enqueue spool: slots that ``enqueue`` could not write because the database was away.

cron fires a rewritten line once per slot; if the database is down, refusing, or stalled at
that moment, the run must not be lost. ``enqueue`` then writes the slot here (one small JSON
file per (database, job, slot)) and exits 75 (EX_TEMPFAIL), so cron's mail still says
something is wrong; the next ``enqueue`` that reaches the database — on this host, for the same
database and table prefix — first replays every spooled slot. Replays are harmless: the slot
key (job_name, scheduled_for) makes a second write of a slot a no-op.

The spool is the last line of defence, so one unusable directory (a full disk, a read-only
file system, a file where the directory should be) does not lose the run: a slot is written
to the first of these places that takes it (``places``):

1. ``--spool`` / ``$MIGRATE_CRON_SPOOL``, when given;
2. ``/var/spool/migrate-cron``, for root (and any user who may write there);
3. the user's state directory, ``$XDG_STATE_HOME`` or ``~/.local/state``, ``/migrate-cron/spool``;
4. ``$TMPDIR`` (default ``/tmp``) ``/migrate-cron-UID``: often another file system (tmpfs),
   but gone at a reboot — the exit-75 line names the place, so cron's mail says where it is.

Replays, ``spool list`` and ``spool flush`` read every one of them. When no place takes the
slot, ``SpoolError`` names each place and why; ``enqueue`` prints that in its one line.

A slot whose job's registry entry could not be read (a syntax error, the entry itself bad)
is spooled *unresolved*: the job's name, the time cron fired it, the ``--slot`` given and the
registry's path. Its replay reads the entry again and resolves the slot as ``enqueue`` would
have at that time; while the entry still does not load, it stays spooled.

Files only, no SQL. A file is written to a temporary name, flushed to disk, then renamed into
place (and the directory flushed), so a crash leaves either the whole entry or none; a
temporary file of a write that failed is removed (and one a crash left behind is removed by
the next replay after ``STALE_PART_SECONDS``). Directories are 0700 and files 0600: only the
owner reads them; the directory under ``$TMPDIR`` (shared by every user) is used only when it
is this user's own, not a symlink, and closed to others.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

SPOOL_ENV = "MIGRATE_CRON_SPOOL"
SYSTEM_SPOOL = Path("/var/spool/migrate-cron")
SUFFIX = ".slot.json"
PART_PREFIX, PART_SUFFIX = ".tmp-", ".part"
#: A temporary file this old is a crashed writer's, never a live one (a write takes ms).
STALE_PART_SECONDS = 600.0


class SpoolError(Exception):
    """No place took the slot: ``str()`` names each place tried and why, in order."""

    def __init__(self, failures: Sequence[str]) -> None:
        self.failures = tuple(failures)
        super().__init__("; ".join(self.failures))


@dataclass(frozen=True)
class SpooledSlot:
    """One slot waiting to be enqueued into the database named by ``target``.

    Unresolved (``registry`` set): ``slot`` is when cron fired the line, ``slot_arg`` the
    ``--slot`` it gave (``auto`` or ISO) and ``max_attempts`` unknown (None) — the replay
    reads the job's entry from ``registry`` to resolve them."""

    job: str
    slot: datetime
    max_attempts: int | None
    target: str  # the database URL (password masked) and table prefix it belongs to
    spooled_at: datetime
    reason: str
    path: Path
    registry: str | None = None
    slot_arg: str | None = None

    @property
    def resolved(self) -> bool:
        return self.registry is None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "job": self.job,
            "slot": self.slot,
            "max_attempts": self.max_attempts,
            "target": self.target,
            "spooled_at": self.spooled_at,
            "reason": self.reason,
            "file": str(self.path),
            "resolved": self.resolved,
        }
        if not self.resolved:
            out.update(registry=self.registry, slot_arg=self.slot_arg)
        return out


@dataclass(frozen=True)
class Placed:
    """Where a slot went, and why the places before it did not take it."""

    path: Path
    failures: tuple[str, ...] = ()


def places(explicit: Path | None = None, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Every place a slot may be spooled to on this host, in the order they are tried."""
    env = os.environ if environ is None else environ
    first = explicit or (Path(env[SPOOL_ENV]) if env.get(SPOOL_ENV) else None)
    out = [first] if first is not None else []
    if os.geteuid() == 0 or _writable(SYSTEM_SPOOL):  # another user never wrote there
        out.append(SYSTEM_SPOOL)
    home = env.get("HOME") or str(Path.home())
    state = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    out.append(Path(state) / "migrate-cron" / "spool")
    out.append(private_tmp(env))
    unique: dict[str, Path] = {}
    for p in out:
        unique.setdefault(os.path.abspath(p), p)
    return list(unique.values())


def private_tmp(environ: Mapping[str, str]) -> Path:
    """This user's spool under ``$TMPDIR`` (the last resort)."""
    return Path(environ.get("TMPDIR") or "/tmp") / f"migrate-cron-{os.geteuid()}"


def default_dir(environ: dict[str, str] | None = None) -> Path:
    """The first place a slot is spooled to (see ``places``)."""
    return places(None, environ)[0]


def _writable(path: Path) -> bool:
    if path.is_dir():
        return os.access(path, os.W_OK | os.X_OK)
    parent = path.parent
    return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)


def target_of(masked_url: str, prefix: str) -> str:
    return f"{masked_url}#{prefix}" if prefix else masked_url


class Spool:
    """A spool: ``directory`` first, then each of ``fallbacks`` (created 0700 on a write)."""

    def __init__(self, directory: Path, fallbacks: Sequence[Path] = ()) -> None:
        self.directory = directory
        self.places = (directory, *(p for p in fallbacks if p != directory))

    @classmethod
    def on_host(cls, explicit: Path | None = None) -> Spool:
        """Every place of this host (``places``): the first one written to first."""
        first, *rest = places(explicit)
        return cls(first, rest)

    def put(
        self,
        job: str,
        slot: datetime,
        max_attempts: int | None,
        target: str,
        reason: str,
        *,
        registry: str | None = None,
        slot_arg: str | None = None,
    ) -> Placed:
        """Write one slot atomically to the first place that takes it; the same (target,
        job, slot) overwrites its own file. ``registry``: an unresolved slot (see
        ``SpooledSlot``). Raises ``SpoolError`` when no place takes it."""
        import hashlib  # only an outage writes: cron's every-minute call does not pay for it

        utc = slot.astimezone(UTC)
        kind = "" if registry is None else "\nunresolved"
        key = hashlib.sha256(f"{target}\n{job}\n{utc.isoformat()}{kind}".encode()).hexdigest()
        name = f"{utc:%Y%m%dT%H%M%S}-{_safe(job)}-{key[:16]}{SUFFIX}"
        record: dict[str, object] = {
            "job": job,
            "slot": utc.isoformat(),
            "max_attempts": max_attempts,
            "target": target,
            "spooled_at": datetime.now(UTC).isoformat(),
            "reason": reason,
        }
        if registry is not None:
            record.update(registry=registry, slot_arg=slot_arg)
        body = json.dumps(record).encode("ascii")  # \u escapes: any name a command line gave
        failures: list[str] = []
        for place in self.places:
            try:
                return Placed(_write(place, name, body), tuple(failures))
            except OSError as exc:
                failures.append(f"{place}: {_why(exc)}")
        raise SpoolError(failures)

    def entries(self, target: str | None = None) -> list[SpooledSlot]:
        """Spooled slots in every place, oldest slot first; ``target`` keeps only that
        database's."""
        out = []
        for place in self.places:
            for path in _files(place):
                entry = _read(path)
                if entry is not None and (target is None or entry.target == target):
                    out.append(entry)
        return sorted(out, key=lambda e: (e.slot, e.job, str(e.path)))

    def flush(self, target: str, write: Callable[[SpooledSlot], bool]) -> Iterator[SpooledSlot]:
        """Replay this target's slots through ``write``: True — written, the file goes;
        False — not yet (an unresolved slot whose entry still does not load), it stays; an
        exception (the database is away) stops the replay and the rest stay. Yields each
        slot once written and removed."""
        for place in self.places:
            _sweep_parts(place)
        for entry in self.entries(target):
            if not write(entry):
                continue
            with contextlib.suppress(FileNotFoundError):  # a concurrent flush removed it
                entry.path.unlink()
            yield entry


def _write(place: Path, name: str, body: bytes) -> Path:
    """One file into ``place``: temporary name, fsync, rename, fsync of the directory. The
    temporary file of a write that fails is removed."""
    import tempfile  # brings random and shutil: only when a slot is spooled

    _make_place(place)
    fd, tmp = tempfile.mkstemp(dir=place, prefix=PART_PREFIX, suffix=PART_SUFFIX)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        final = place / name
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the file is in place; a failed flush of the
        _fsync_dir(place)  # directory entry cannot be undone by removing it
    return final


def _make_place(place: Path) -> None:
    """Create ``place`` (0700); the shared temporary directory must be this user's own."""
    try:
        place.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(20, "not a directory") from None
    if place.name != f"migrate-cron-{os.geteuid()}":
        return
    st = os.lstat(place)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise PermissionError(1, "not this user's private directory (owner, mode or symlink)")


def _why(exc: OSError) -> str:
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return "a file, not a directory"
    return exc.strerror or str(exc)


def _files(place: Path) -> list[Path]:
    """The slot files of ``place`` (none if it is missing, unreadable, or a shared
    temporary directory that is not this user's own)."""
    if place.name == f"migrate-cron-{os.geteuid()}":
        try:
            st = os.lstat(place)
        except OSError:
            return []
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return []
    try:
        with os.scandir(place) as it:
            return sorted(Path(e.path) for e in it if e.name.endswith(SUFFIX))
    except OSError:
        return []


def _sweep_parts(place: Path) -> None:
    """Remove temporary files a crashed writer left behind (never a live writer's)."""
    try:
        with os.scandir(place) as it:
            stale = [
                e.path
                for e in it
                if e.name.startswith(PART_PREFIX)
                and e.name.endswith(PART_SUFFIX)
                and time.time() - e.stat(follow_symlinks=False).st_mtime > STALE_PART_SECONDS
            ]
    except OSError:
        return
    for path in stale:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _read(path: Path) -> SpooledSlot | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        registry = raw.get("registry")
        attempts = raw.get("max_attempts")
        return SpooledSlot(
            job=str(raw["job"]),
            slot=datetime.fromisoformat(raw["slot"]),
            max_attempts=None if attempts is None else int(attempts),
            target=str(raw["target"]),
            spooled_at=datetime.fromisoformat(raw["spooled_at"]),
            reason=str(raw.get("reason", "")),
            path=path,
            registry=None if registry is None else str(registry),
            slot_arg=None if registry is None else str(raw.get("slot_arg") or "auto"),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # half-written files never get this name; anything else is left alone


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
