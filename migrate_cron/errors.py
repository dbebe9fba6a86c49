"""Exceptions a user can act on.

Every error that reaches the CLI is one of these: the CLI prints its message as one line and
exits with ``exit_code`` (1: something the user must fix or act on, 2: usage / unreadable input).
Anything else is a bug and gets a traceback only with ``--debug``.
"""

from __future__ import annotations


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


class SchemaMissing(MigrateCronError):
    """The tables do not exist yet: ``migrate-cron db upgrade`` was not run."""


class UnknownJob(MigrateCronError):
    """A job name that is not in the registry: a usage error (a typo, most of the time)."""

    exit_code = 2
