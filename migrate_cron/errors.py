"""Exceptions a user can act on.

Every error that reaches the CLI is one of these: the CLI prints its message as one line and
exits with ``exit_code`` (1: something the user must fix or act on, 2: usage / unreadable input,
65: data the database refused — EX_DATAERR of sysexits.h, never retried like an outage).
Anything else is a bug and gets a traceback only with ``--debug``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime


class MigrateCronError(Exception):
    """Base class; ``str(exc)`` is the one line shown to the user."""

    exit_code = 1


class UsageError(MigrateCronError):
    """Bad arguments or unreadable input files."""

    exit_code = 2


class ConfigError(MigrateCronError):
    """A configuration or registry file is invalid; the message names file, job and key."""


class DatabaseUnavailable(MigrateCronError):
    """The database cannot be reached (down, wrong credentials, bad URL)."""


#: sysexits.h: "the input data was incorrect in some way" (75, EX_TEMPFAIL, is the outage's).
EX_DATAERR = 65


class DataRefused(MigrateCronError):
    """The database refused a value, not the connection: an invalid one (NUL or a bad
    Unicode escape in JSON on PostgreSQL, a CHECK constraint on MariaDB) or one too large.
    The same data fails the same way again, so it is never an outage to wait out or retry."""

    exit_code = EX_DATAERR


class SchemaMissing(MigrateCronError):
    """The tables do not exist yet: ``migrate-cron db upgrade`` was not run."""


class UnknownJob(MigrateCronError):
    """A job name that is not in the registry: a usage error (a typo, most of the time)."""

    exit_code = 2


class EffectInDoubt(MigrateCronError):
    """A side-effect key is ``attempted``: a run started it and never recorded how it ended
    (still running, or crashed). Running it again could repeat the effect, so nothing does
    until a person checks. Exit 3, distinct from the command's own failures."""

    exit_code = 3

    def __init__(
        self, key: str, holder: str | None, attempted_at: datetime, alive: bool | None = None
    ) -> None:
        self.key = key
        self.holder = holder
        self.attempted_at = attempted_at
        by = f" by {holder}" if holder else ""
        if alive is True:
            why = "that process is still running it"
        elif alive is False:
            why = "that process is gone (crashed or killed), so the effect may have happened"
        else:
            why = "it is still running, or it crashed and the effect may have happened"
        super().__init__(
            f"side effect {key!r} was attempted at {attempted_at:%Y-%m-%d %H:%M:%S} UTC{by} "
            f"and has no recorded outcome: {why}. Check it, then `migrate-cron once --forget "
            f"{key}` (or run with --retry-attempted)"
        )
