"""Our own Alembic environment, shipped in the package: what ``migrate-cron db`` runs.

No alembic.ini is needed: Alembic runs programmatically with the script location inside the
package and a version table of our own (``{prefix}migrate_cron_alembic_version``), so it never
touches the user's ``alembic_version``. The default prefix uses the packaged revision files
as they are (the same bytes as the repository's ``alembic/versions``); any other prefix gets the
same revisions rendered with that prefix into a temporary copy of the environment. A database
at an older step is upgraded by the steps it lacks (``db upgrade`` goes to the head).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from argparse import Namespace
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from migrate_cron.errors import DatabaseUnavailable, MigrateCronError
from migrate_cron.generate.revision import version_table, write_revisions

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection

ENV_DIR = Path(__file__).with_name("alembic_env")


class SchemaConflict(MigrateCronError):
    """The database disagrees with the revision (tables created outside ``migrate-cron db``)."""


@dataclass(frozen=True)
class SchemaState:
    """Which revisions the database has recorded, and which the package ships."""

    database: str  # masked URL
    table_prefix: str
    version_table: str
    current: tuple[str, ...]
    heads: tuple[str, ...]

    @property
    def up_to_date(self) -> bool:
        return bool(self.current) and set(self.current) == set(self.heads)


@contextlib.contextmanager
def script_location(prefix: str) -> Iterator[Path]:
    """The environment directory for ``prefix`` (temporary unless it is the default one)."""
    if not prefix:
        yield ENV_DIR
        return
    from alembic.script import ScriptDirectory

    with tempfile.TemporaryDirectory(prefix="migrate-cron-env-") as tmp:
        root = Path(tmp)
        for name in ("env.py", "script.py.mako"):
            shutil.copyfile(ENV_DIR / name, root / name)
        (root / "versions").mkdir()
        write_revisions(ScriptDirectory(str(root)), prefix)
        yield root


def current(url: str, prefix: str) -> SchemaState:
    before, _ = _run(url, prefix, None)
    return before


def upgrade(url: str, prefix: str, revision: str = "head") -> tuple[SchemaState, SchemaState]:
    """Apply our revision(s) up to ``revision``; returns the state before and after."""
    from alembic import command

    return _run(url, prefix, lambda config: command.upgrade(config, revision))


def downgrade(url: str, prefix: str, revision: str = "-1") -> tuple[SchemaState, SchemaState]:
    """Undo our revision(s) down to ``revision`` (``base`` drops the tables)."""
    from alembic import command

    def _down(config: Config) -> None:
        if config.attributes["before"].current:  # nothing recorded: nothing to undo
            command.downgrade(config, revision)

    return _run(url, prefix, _down)


def _run(
    url: str, prefix: str, action: Callable[[Config], None] | None
) -> tuple[SchemaState, SchemaState]:
    """Run ``action`` on one connection in one transaction (all or nothing where DDL is
    transactional: PostgreSQL, SQLite)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError
    from sqlalchemy import exc as sa_exc

    from migrate_cron.config import mask_url, validate_prefix
    from migrate_cron.store.engine import make_engine

    prefix = validate_prefix(prefix)
    engine = make_engine(url)
    safe_url = mask_url(engine.url.render_as_string(hide_password=True))
    table = version_table(prefix)
    try:
        with script_location(prefix) as location:
            config = Config(cmd_opts=Namespace(quiet=True))
            config.set_main_option("script_location", str(location).replace("%", "%%"))
            config.set_main_option("version_table", table)
            config.set_main_option("migrate_cron_table_prefix", prefix)
            heads = tuple(ScriptDirectory.from_config(config).get_heads())
            if not heads:
                raise MigrateCronError(f"no revision in {location}: the package is incomplete")
            with engine.begin() as conn:
                before = SchemaState(safe_url, prefix, table, _recorded(conn, table), heads)
                if action is not None:
                    config.attributes.update(connection=conn, before=before)
                    action(config)
                after = SchemaState(safe_url, prefix, table, _recorded(conn, table), heads)
                if action is not None and not after.current:
                    _drop_version_table(conn, table)
    except CommandError as exc:
        raise MigrateCronError(f"{safe_url}: {mask_url(str(exc))}") from None
    except sa_exc.DBAPIError as exc:
        raise _database_error(exc, safe_url, table) from None
    finally:
        engine.dispose()
    return before, after


def _recorded(conn: Connection, table: str) -> tuple[str, ...]:
    from alembic.runtime.migration import MigrationContext

    context = MigrationContext.configure(conn, opts={"version_table": table})
    return tuple(context.get_current_heads())


def _drop_version_table(conn: Connection, table: str) -> None:
    """At base, our empty version table goes too: a downgrade leaves nothing of ours behind."""
    from sqlalchemy import MetaData, Table, inspect

    if inspect(conn).has_table(table):
        Table(table, MetaData()).drop(conn)


def _database_error(exc: Exception, safe_url: str, table: str) -> MigrateCronError:
    from sqlalchemy import exc as sa_exc

    from migrate_cron.config import mask_url

    orig = getattr(exc, "orig", exc)
    text = mask_url(str(orig).strip().splitlines()[0] if str(orig).strip() else repr(orig))
    if "already exists" in text.lower():
        return SchemaConflict(
            f"{safe_url}: {text} — the tables exist but {table} does not record them "
            "(created by your own Alembic history, or by a test helper); apply the revision "
            "there, or drop the tables first"
        )
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
        return DatabaseUnavailable(f"cannot use the database {safe_url}: {text}")
    return MigrateCronError(f"{safe_url}: {text}")
