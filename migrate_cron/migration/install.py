"""Installing a user crontab with the system's ``crontab`` command.

A user crontab lives in cron's spool and is changed only through ``crontab``: the team works on
an exported copy (``crontab -l > my.crontab``), and ``--install`` pipes the switched copy to
``crontab -``. Before that, the installed crontab must still be the exported copy — otherwise an
edit made with ``crontab -e`` since the export would be overwritten without anyone noticing.
"""

from __future__ import annotations

import subprocess
from typing import Protocol

from migrate_cron.errors import MigrateCronError

_TIMEOUT = 30.0


class Installer(Protocol):
    def current(self) -> bytes | None:
        """The installed crontab of the current user, or None when there is none."""
        ...

    def install(self, data: bytes) -> None: ...


class CrontabCommand:
    """``crontab -l`` / ``crontab -`` for the user running migrate-cron."""

    def __init__(self, program: str = "crontab") -> None:
        self.program = program

    def current(self) -> bytes | None:
        proc = self._run(["-l"], None)
        if proc.returncode != 0:
            if b"no crontab" in proc.stderr.lower():
                return None
            raise MigrateCronError(
                f"`{self.program} -l` failed (exit {proc.returncode}): {_tail(proc.stderr)}"
            )
        return proc.stdout

    def install(self, data: bytes) -> None:
        proc = self._run(["-"], data)
        if proc.returncode != 0:
            raise MigrateCronError(
                f"`{self.program} -` refused the new crontab (exit {proc.returncode}): "
                f"{_tail(proc.stderr)}"
            )

    def _run(self, args: list[str], data: bytes | None) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                [self.program, *args],
                input=data,
                capture_output=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise MigrateCronError(
                f"no `{self.program}` command on this machine: install cron, or leave out "
                "--install and install the file yourself"
            ) from None
        except subprocess.TimeoutExpired:
            raise MigrateCronError(
                f"`{self.program} {' '.join(args)}` did not finish in {_TIMEOUT:.0f} s"
            ) from None


def _tail(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[-1] if text else "no message"
