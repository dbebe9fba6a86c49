"""A throwaway MariaDB server the test owns: its own data directory, port and socket, started
with ``--no-defaults``, so it has the compiled-in defaults a packaged server's config hides —
above all ``character_set_server = latin1`` (``latin1_swedish_ci``), the server where a column
without its own character set cannot hold ``✓`` or CJK (docs/reliability.md, row 15).

``mariadbd`` refuses to run as root unless told a user, so when the tests run as root the data
directory is chowned to ``mysql`` and the server runs with ``--user=mysql``. Everything it
writes stays under one temporary directory, removed with the server (``throwaway_mariadb``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.faults.pgserver import _free_port

#: Generous for a loaded two-core machine; a free one starts in about a second.
START_TIMEOUT = 60.0


def server_binaries() -> tuple[str, str] | None:
    """(install-db, server) programs, by their MariaDB names or the older MySQL-era ones."""
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    server = shutil.which("mariadbd") or shutil.which("mysqld")
    for directory in ("/usr/sbin", "/usr/libexec"):
        server = server or next(
            (str(p) for p in (Path(directory) / n for n in ("mariadbd", "mysqld")) if p.exists()),
            None,
        )
    return (install, server) if install and server else None


class ThrowawayMariaDB:
    def __init__(self, install_db: str, server: str) -> None:
        self.install_db = install_db
        self.server = server
        self.root = Path(tempfile.mkdtemp(prefix="mct-my-"))
        self.data = self.root / "data"
        self.socket = self.root / "mysqld.sock"
        self.logfile = self.root / "server.log"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._user = "mysql" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        if os.geteuid() == 0:
            entry = pwd.getpwnam("mysql")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self.root.chmod(0o700)

    def url(self, database: str = "test") -> str:
        return f"mariadb+pymysql://root@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        result = subprocess.run(
            [
                self.install_db,
                "--no-defaults",
                f"--datadir={self.data}",
                f"--user={self._user}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
            check=False,
            cwd=self.root,
        )
        if result.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {result.stdout}{result.stderr}")

    def start(self) -> None:
        """Start the server and wait until it answers on its socket (bounded)."""
        argv = [
            self.server,
            "--no-defaults",  # the compiled-in defaults: latin1
            f"--datadir={self.data}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.socket}",
            f"--pid-file={self.root / 'mysqld.pid'}",
            f"--log-error={self.logfile}",
            f"--user={self._user}",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=32M",
            "--innodb-log-file-size=16M",
            "--innodb-flush-log-at-trx-commit=0",
        ]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = self.logfile.read_text(errors="replace") if self.logfile.exists() else ""
                code = self.proc.poll()
                raise RuntimeError(f"mariadbd did not start (exit {code}): {log[-2000:]}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        import pymysql

        try:
            conn = pymysql.connect(
                unix_socket=str(self.socket), user="root", connect_timeout=2, read_timeout=5
            )
        except pymysql.MySQLError:
            return False
        conn.close()
        return True

    def execute(self, *statements: str) -> list[tuple[object, ...]]:
        """Run statements as root over the socket; the rows of the last one."""
        import pymysql

        conn = pymysql.connect(
            unix_socket=str(self.socket), user="root", autocommit=True, read_timeout=30
        )
        try:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
                return list(cur.fetchall())
        finally:
            conn.close()

    def destroy(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def throwaway_mariadb() -> Iterator[ThrowawayMariaDB]:
    """A fresh latin1-default MariaDB with an empty ``test`` database, removed on the way out."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("no MariaDB server binaries (mariadb-install-db, mariadbd) on PATH")
    server = ThrowawayMariaDB(*binaries)
    try:
        server.init()
        server.start()
        server.execute("CREATE DATABASE test")
        yield server
    finally:
        server.destroy()
