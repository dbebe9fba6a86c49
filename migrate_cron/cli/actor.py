"""Who acts when a person runs an acting command (``jobs retry``/``cancel``/``run``,
``pause``/``resume``): the OS user, from ``cli@HOST``, as the action log records it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from migrate_cron.store.actions import Actor


def cli_actor() -> Actor:
    """The OS user running the command (``sudo``'s caller when there is one: the person,
    not root) and the host it runs on."""
    import getpass
    import os
    import socket

    from migrate_cron.store.actions import Actor

    who = os.environ.get("SUDO_USER") or getpass.getuser()
    return Actor(who, f"cli@{socket.gethostname()}")
