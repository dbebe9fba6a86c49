"""Who a legacy command runs as: the user its crontab line ran as.

cron runs a line of /etc/crontab or /etc/cron.d as the user in its user field, and a user's
crontab as that user: setgid, initgroups, setuid, with HOME and LOGNAME (and USER) from the
passwd entry and the home as working directory. A registry job with ``user = "NAME"`` gets the
same. A worker that cannot become that user (it does not run as root, or NAME does not exist on
this host) does not claim the job at all — it waits for a worker that can, visible in
``status`` — rather than run it as someone else.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from typing import Any


class IdentityError(Exception):
    """This process cannot run commands as the wanted user (the message says why)."""


@dataclass(frozen=True)
class Identity:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str
    shell: str

    def popen_kwargs(self) -> dict[str, Any]:
        """What ``subprocess.Popen`` needs to start a process as this user (nothing when we
        already are this user)."""
        if os.geteuid() == self.uid and os.getegid() == self.gid:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups)}


def lookup(user: str) -> Identity:
    """The identity to run as ``user``; IdentityError if this process cannot."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise IdentityError(f"there is no user {user!r} on this host") from None
    if os.geteuid() != 0 and os.geteuid() != entry.pw_uid:
        me = _name(os.geteuid())
        raise IdentityError(
            f"this worker runs as {me}, not root: it cannot run commands as {user!r} "
            "(run a worker as root, or as that user)"
        )
    try:
        groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except OSError:
        groups = (entry.pw_gid,)
    return Identity(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir, entry.pw_shell)


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


__all__ = ["Identity", "IdentityError", "lookup"]
