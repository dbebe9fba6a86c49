"""What a job reads and writes on disk, as far as its commands say, for ordering findings.

Only commands whose effect on a path is known are read: copies (``rsync``/``cp``/``scp``:
source read, destination written), ``find … -delete`` and ``rm`` (the directory changed),
archive tools, ``rsnapshot INTERVAL`` (rotates ``INTERVAL.0``, ``INTERVAL.1``… in its snapshot
root: rsnapshot(1)), ``du``/``df`` and the output files of redirections (logs excepted). A
job that reads what an earlier one writes depends on it; nothing else is taken as a link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from migrate_cron.analysis.tree import Script
from migrate_cron.analysis.work_calls import work_calls
from migrate_cron.analysis.wrappers import basename

_COPIES = frozenset(("rsync", "cp", "scp", "rclone", "mv", "unison"))
_LOG = re.compile(r"(?:^/var/log/|^/proc/|^/dev/|\.log$|\.log\.txt$|\.out$|\.err$)")
_SYSTEM = ("/usr/", "/bin", "/sbin", "/etc/", "/lib", "/var/lib/", "/usr")
_SNAPSHOT = re.compile(r"^([A-Za-z]+)\.\d+$")


@dataclass(frozen=True, slots=True)
class Paths:
    reads: frozenset[str]
    writes: frozenset[str]
    #: rsnapshot levels whose snapshots (``LEVEL.0``…) the job rotates.
    rotates: frozenset[str]
    #: Directories the job's commands work in (its scripts' and ``cd``'s).
    places: frozenset[str]


def paths(script: Script) -> Paths:
    if "paths" not in script.memo:
        script.memo["paths"] = _paths(script)
    found: Paths = script.memo["paths"]
    return found


def _paths(script: Script) -> Paths:
    reads: set[str] = set()
    writes: set[str] = set()
    rotates: set[str] = set()
    places: set[str] = set()
    for call in script.top:
        cd = call.words[:1] and call.words[0].value == "cd" and len(call.words) > 1
        if cd and call.words[1].literal and call.words[1].value.startswith("/"):
            places.add(_norm(call.words[1].value))
    for call, inner in work_calls(script):
        argv = list(inner.argv)
        prog = basename(argv[0])
        operands = [a for a in argv[1:] if not a.startswith("-") and "/" in a and "$" not in a]
        if argv[0].startswith("/") or argv[0].startswith("~"):
            places.add(_norm(argv[0].rsplit("/", 1)[0]))
        scripts = [a for a in argv[1:2] if a.startswith("/")]
        places.update(_norm(s.rsplit("/", 1)[0]) for s in scripts)
        for redirect in call.chain:
            target = redirect.target
            if redirect.is_output and target.startswith("/") and not _LOG.search(target):
                writes.add(_norm(target))
        if prog in _COPIES and len(operands) >= 2:
            reads.update(_norm(a) for a in operands[:-1])
            writes.add(_norm(operands[-1]))
        elif prog == "find" and operands:
            where = _norm(operands[0])
            if "-delete" in argv or "-exec" in argv:
                writes.add(where)
            reads.add(where)
        elif prog == "rm":
            writes.update(_norm(a) for a in operands)
        elif prog in ("du", "df", "tar", "zip", "gzip", "borg", "restic") and operands:
            reads.update(_norm(a) for a in operands)
        elif prog == "rsnapshot":
            level = next((a for a in argv[1:] if not a.startswith("-")), None)
            if level and level.isalpha():
                rotates.add(level)
    return Paths(frozenset(reads), frozenset(writes), frozenset(rotates), frozenset(places))


def _norm(path: str) -> str:
    return path.rstrip("/") or "/"


def shares(read: str, write: str) -> bool:
    """The same path, or one inside the other."""
    return read == write or read.startswith(write + "/") or write.startswith(read + "/")


def snapshot_level(path: str) -> str | None:
    """``/var/backups/hourly.0`` → ``hourly``: a path inside an rsnapshot snapshot."""
    for part in path.split("/"):
        match = _SNAPSHOT.match(part)
        if match:
            return match.group(1)
    return None


def link(earlier: Paths, later: Paths) -> str | None:
    """What ``later`` reads that ``earlier`` writes, said in a few words; None when nothing."""
    for read in sorted(later.reads):
        for write in sorted(earlier.writes):
            if shares(read, write):
                return f"{write}, which it changes and this job reads"
        level = snapshot_level(read)
        if level and level in earlier.rotates:
            return f"the {level} snapshot it copies ({basename(read)})"
    return None


def common_place(a: Paths, b: Paths) -> str | None:
    """The deepest directory both jobs work in (at least three levels deep), or None."""
    best: str | None = None
    for x in a.places:
        for y in b.places:
            common = _common(x, y)
            if common.startswith(_SYSTEM) or common in ("/opt", "/srv", "/home", "/var/www"):
                continue  # /usr/local/bin holds every admin's scripts: no shared application
            if common.count("/") >= 3 and (best is None or len(common) > len(best)):
                best = common
    return best


def _common(x: str, y: str) -> str:
    parts = []
    for p, q in zip(x.split("/"), y.split("/"), strict=False):
        if p != q:
            break
        parts.append(p)
    return "/".join(parts)
