"""How a switched crontab line reaches migrate-cron from cron's bare environment.

Cron runs the line in the user's HOME with a minimal PATH and none of the shell's settings, so
the line names migrate-cron and the registry by absolute path, and the database by a URL that
holds no secret (a crontab is readable by more people than a secret is) or by none at all
(cron then provides it in the environment).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Target:
    """How the switched crontab line reaches migrate-cron from cron's bare environment:
    absolute paths, and a database URL without a password (or none: read from the
    environment cron gives it)."""

    executable: str
    registry: str
    database_url: str | None = None
    table_prefix: str = ""

    def argv(self, name: str) -> list[str]:
        argv = [self.executable, "enqueue", name, "--quiet", "--registry", self.registry]
        if self.database_url is not None:
            argv += ["--database-url", self.database_url]
        if self.table_prefix:
            argv += ["--table-prefix", self.table_prefix]
        return argv


def cron_target(
    registry: Path, executable: str | None, url: str, prefix: str, url_from_env: bool
) -> Target:
    """The target from ``migrate``'s options: every path absolute (cron runs in HOME with a
    bare PATH), and the URL in the line only when it holds no secret."""
    from migrate_cron.config import validate_prefix

    return Target(
        executable=executable_path(executable),
        registry=str(registry.resolve()),
        database_url=None if url_from_env else cron_url(url),
        table_prefix=validate_prefix(prefix),
    )


def executable_path(given: str | None) -> str:
    """migrate-cron's absolute path as cron must run it: ``given``, else this command's own."""
    import os
    import shutil
    import sys

    from migrate_cron.errors import UsageError

    if given:
        if not os.path.isabs(given):
            raise UsageError(f"--executable {given}: give an absolute path (cron has no PATH)")
        return given
    argv0 = sys.argv[0]
    if os.path.basename(argv0) == "migrate-cron" and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    found = shutil.which("migrate-cron")
    if found:
        return os.path.abspath(found)
    raise UsageError(
        "cannot tell where the migrate-cron command is installed: pass --executable PATH"
    )


def cron_url(url: str) -> str:
    """The database URL as the crontab line will carry it: absolute SQLite paths (cron runs
    in HOME) and never a password (a crontab is readable by more people than a secret is)."""
    from sqlalchemy.engine import make_url

    from migrate_cron.config import mask_url, url_secret
    from migrate_cron.errors import UsageError
    from migrate_cron.store.dialects import normalize_url

    try:
        parsed = make_url(normalize_url(url))
    except Exception:
        raise UsageError(f"--database-url: not a database URL: {mask_url(url)!r}") from None
    secret = url_secret(url)
    if parsed.password or secret:
        raise UsageError(
            f"the crontab line would contain a database secret ({secret or 'a password'}). "
            "Use a URL without one "
            "(PostgreSQL reads ~/.pgpass of the crontab's user; MySQL/MariaDB: add "
            "?read_default_file=/home/USER/.my.cnf), or pass --url-from-env and set "
            "MIGRATE_CRON_DATABASE_URL for cron yourself"
        )
    from migrate_cron.store.engine import absolute_file

    return str(absolute_file(parsed).render_as_string(hide_password=False))
