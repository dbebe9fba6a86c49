"""A throwaway PostgreSQL server the test owns: its own data directory, port and socket, so it
can be stopped and restarted without touching the shared server.

``initdb`` refuses to run as root, so when the tests run as root the server runs as the
``postgres`` user (``runuser -u postgres --``) in a temporary directory chowned to it.

``primary_and_replica`` starts two: a primary and a streaming replica cloned from it with
``pg_basebackup -R``, the replica's WAL stream passing through a ``StallingProxy`` so a test can
hold it back (a replica that lags) — for failover tests.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.faults.proxy import StallingProxy

#: Settings for a server whose crash-safety the tests do not need (it is never crashed as a
#: machine is; ``pg_ctl stop -m immediate`` kills processes, and the OS keeps their writes).
FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def server_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` with initdb and pg_ctl (or $PG_BIN)."""
    candidates = [os.environ["PG_BIN"]] if os.environ.get("PG_BIN") else []
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
    )[::-1]
    for c in candidates:
        if (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayPostgres:
    def __init__(self, bin_dir: Path, settings: dict[str, str] | None = None) -> None:
        self.bin = bin_dir
        #: ``-c name=value`` at start (values without spaces: pg_ctl passes them to a shell).
        self.settings = dict(FAST if settings is None else settings)
        self.root = Path(tempfile.mkdtemp(prefix="mct-pg-"))
        self.data = self.root / "data"
        self.logfile = self.root / "server.log"
        self.port = _free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self.root.chmod(0o700)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / argv[0]), *argv[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=self.root
        )

    def _check(self, result: subprocess.CompletedProcess[str], what: str) -> None:
        if result.returncode != 0:
            log = self.logfile.read_text(errors="replace")[-2000:] if self.logfile.exists() else ""
            raise RuntimeError(f"{what} failed: {result.stdout}{result.stderr}\n{log}")

    def init(self) -> None:
        self._check(
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ),
            "initdb",
        )

    def start(self) -> None:
        opts = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root}"
        ) + "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._check(
            self._run(
                "pg_ctl",
                "-D",
                str(self.data),
                "-l",
                str(self.logfile),
                "-o",
                opts,
                "-w",
                "-t",
                "60",
                "start",
            ),
            "pg_ctl start",
        )

    def clone(self, primary_conninfo: str) -> None:
        """Make this data directory a streaming replica of the server at ``primary_conninfo``:
        ``pg_basebackup -R`` writes ``standby.signal`` and ``primary_conninfo`` for it."""
        self._check(
            self._run(
                "pg_basebackup", "-D", str(self.data), "-R", "-X", "stream", "-c", "fast",
                "--no-sync", "-d", primary_conninfo,
            ),
            "pg_basebackup",
        )  # fmt: skip

    def allow_replication(self) -> None:
        """A ``pg_hba.conf`` line for replication connections from 127.0.0.1 (trust); initdb's
        default has it too, but the test should not depend on that default."""
        with open(self.data / "pg_hba.conf", "a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")

    def promote(self) -> None:
        self._check(
            self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "promote"), "promote"
        )

    def stop(self, mode: str = "fast") -> None:
        self._check(
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"),
            "pg_ctl stop",
        )

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[ThrowawayPostgres]:
    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
    server = ThrowawayPostgres(bin_dir)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.destroy()


@dataclass
class ReplicatedPostgres:
    """A primary and a streaming replica; ``link`` carries the replica's WAL stream."""

    primary: ThrowawayPostgres
    replica: ThrowawayPostgres
    link: StallingProxy
    #: Whether every commit on the primary waits until the replica has it.
    synchronous: bool

    def url(self, database: str = "postgres") -> str:
        """The libpq multi-host URL a client of a replicated server uses: both hosts, and
        only a server that takes writes is a connection (SQLAlchemy's spelling)."""
        return (
            f"postgresql+psycopg://postgres@/{database}?host=127.0.0.1:{self.primary.port}"
            f"&host=127.0.0.1:{self.replica.port}&target_session_attrs=read-write"
        )


def replication_state(server: ThrowawayPostgres) -> list[tuple[str, str]]:
    """``(state, sync_state)`` of each standby the server streams to."""
    import psycopg

    with psycopg.connect(server.url.replace("+psycopg", ""), autocommit=True) as conn:
        rows = conn.execute("SELECT state, sync_state FROM pg_stat_replication").fetchall()
    return [(str(a), str(b)) for a, b in rows]


@contextlib.contextmanager
def primary_and_replica(*, synchronous: bool) -> Iterator[ReplicatedPostgres]:
    """Both servers started, the replica streaming (``sync`` with ``synchronous``: every
    commit then waits until the replica has the WAL on disk — ``synchronous_commit = on``
    with ``synchronous_standby_names = '*'``); both destroyed on the way out."""
    import time

    import psycopg

    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
    durable = {**FAST, "synchronous_commit": "on"}
    primary = ThrowawayPostgres(bin_dir, durable)
    replica = ThrowawayPostgres(bin_dir, durable)
    link: StallingProxy | None = None
    try:
        primary.init()
        primary.allow_replication()
        primary.start()
        link = StallingProxy("127.0.0.1", primary.port)
        replica.clone(f"host=127.0.0.1 port={link.port} user=postgres")
        replica.start()
        want = "sync" if synchronous else "async"
        # After the clone: the promoted replica must not wait for a standby of its own.
        if synchronous:
            with psycopg.connect(primary.url.replace("+psycopg", ""), autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
                conn.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 60
        while replication_state(primary) != [("streaming", want)]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the replica is not streaming: {replication_state(primary)}")
            time.sleep(0.1)
        yield ReplicatedPostgres(primary, replica, link, synchronous)
    finally:
        if link is not None:
            link.close()
        replica.destroy()
        primary.destroy()
