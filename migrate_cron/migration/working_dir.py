"""Where cron runs a line (its ``HOME=``, else its owner's home), and what cron does when
that directory is missing, which the worker does too: the entry's ``cwd`` and its comment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_cron.crontab.flavour import Flavour

if TYPE_CHECKING:
    from migrate_cron.crontab.entry import CrontabLine


def working_directory(
    line: CrontabLine,
    user: str | None,
    cron: Flavour,
    homes: Callable[[str | None], tuple[str | None, str, bool]] | None = None,
) -> tuple[str | None, str, bool]:
    """Where cron runs the line, a comment saying why, and whether that directory is missing
    on this host: the ``HOME=`` set above it (Debian and cronie chdir to the job's HOME, the
    crontab's value first), else its user's home (``homes``: ``home_of`` for ``cron``, or a
    cache of it). A missing directory is still the entry's ``cwd`` (it may exist where and
    when the worker runs); the comment says what ``cron`` does without it, which the worker
    does too (``cwd_fallback``)."""
    homes = homes or (lambda user: home_of(user, cron))
    home = line.env.get("HOME") if cron.home_from_crontab else None
    if home is None:
        return homes(user)
    if not home.startswith("/"):
        found, where, missing = homes(user)
        return found, f"HOME={home} above the line is not an absolute path; {where}", missing
    if not Path(home).is_dir():
        return home, f"cwd: HOME={home} above the line, which {home_missing(cron)}", True
    return home, f"cwd: HOME={home} above the line: {cron.label} runs the command there", False


def home_of(user: str | None, cron: Flavour) -> tuple[str | None, str, bool]:
    """Where cron runs a line: its owner's home. For a system line that is the user field's
    home on this host; a user crontab is assumed to be the current user's (the usual
    ``crontab -l > file``): a missing one is left unset (the worker's own HOME then)."""
    import pwd

    try:
        home = pwd.getpwnam(user).pw_dir if user else str(Path.home())
    except (KeyError, RuntimeError):
        return None, f"cwd not set: no home directory for {user or 'this user'} on this host", False
    if not Path(home).is_dir():
        if not user:
            return None, f"cwd not set: {home} {home_missing(cron)}", True
        return home, f"cwd: {user}'s home {home}, which {home_missing(cron)}", True
    if user:
        return home, f"cwd: {user}'s home, where cron runs the line", False
    return (
        home,
        "cwd: the home of the user who generated this (cron runs a line in its owner's home)",
        False,
    )


def home_missing(cron: Flavour) -> str:
    """The end of a sentence about a missing directory: what ``cron`` does then, which the
    worker does too."""
    if cron.home_missing_dir is not None:
        return (
            f"does not exist on this host: {cron.label} then runs the command in "
            f"{cron.home_missing_dir}, and so does the worker (cwd_fallback)"
        )
    return (
        f"does not exist on this host: {cron.label} then does not run the command (it logs "
        '"chdir failed"); neither does the worker: each such run fails at once, not retried, '
        "until the directory exists"
    )
