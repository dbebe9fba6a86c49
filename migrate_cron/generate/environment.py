"""Our own Alembic environment, shipped in the package: what ``migrate-cron db`` runs.

No alembic.ini is needed: Alembic runs programmatically with the script location inside the
package and a version table of our own (``{prefix}migrate_cron_alembic_version``), so it never
touches the user's ``alembic_version``. The default prefix uses the packaged revision files
as they are (the same bytes as the repository's ``alembic/versions``); any other prefix gets the
same revisions rendered with that prefix into a temporary copy of the environment. A database
at an older step is upgraded by the steps it lacks (``db upgrade`` goes to the head).

There are two ways to the tables, one per situation (README, "Two ways to the tables"): your
own Alembic project (``generate migration``, then ``alembic upgrade head``, recorded in your
``alembic_version``) or this packaged revision (``migrate-cron db upgrade``, recorded in ours).
The state is read from both: which steps' tables exist, whoever made them, and which version
table records them, so ``db current`` names the path that owns the tables and ``db
upgrade``/``downgrade`` refuse, in one line, to act on tables another history records (they
would fail half-way on "table already exists", or drop what that history still lists).
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
    #: Recorded in our version table (``migrate-cron db``).
    current: tuple[str, ...]
    heads: tuple[str, ...]
    #: Steps whose tables all exist, oldest first, whichever history created them.
    found: tuple[str, ...] = ()
    #: Other Alembic version tables in the database (the user's project records there).
    histories: tuple[str, ...] = ()
    #: False for a SQLite file that does not exist (nothing was created to find out).
    exists: bool = True
    #: Our revisions recorded in those other version tables: where the user's project says
    #: our tables are (a step that changes no table's shape shows only there).
    recorded_elsewhere: tuple[str, ...] = ()

    @property
    def managed_elsewhere(self) -> bool:
        """Our tables exist and our version table records none of them: the user's Alembic
        project made them (or something without a history, when ``histories`` is empty)."""
        return not self.current and bool(self.found)

    @property
    def at(self) -> tuple[str, ...]:
        """The revision(s) the tables are at: ours as recorded, else as the user's history
        records them, else the newest step whose tables exist."""
        return self.current or self.recorded_elsewhere[-1:] or self.found[-1:]

    @property
    def up_to_date(self) -> bool:
        return bool(self.at) and set(self.at) == set(self.heads)

    @property
    def managed_by(self) -> str | None:
        """``migrate-cron`` (our version table), ``alembic`` (another Alembic history),
        ``nothing`` (tables no history records), None (no tables)."""
        if self.current:
            return "migrate-cron"
        if not self.found:
            return None
        return "alembic" if self.histories else "nothing"


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
    from migrate_cron.store.engine import missing_file

    if missing_file(url) is not None:  # reading must not create the file
        return _absent(url, prefix)
    before, _ = _run(url, prefix, None)
    return before


def upgrade(url: str, prefix: str, revision: str = "head") -> tuple[SchemaState, SchemaState]:
    """Apply our revision(s) up to ``revision``; returns the state before and after.

    Tables another Alembic history made are left to it: at the head there is nothing to do,
    behind it ``SchemaConflict`` says how that history gets the missing steps."""
    from alembic import command

    def _up(config: Config) -> None:
        before: SchemaState = config.attributes["before"]
        if before.managed_elsewhere:
            if before.up_to_date and before.managed_by == "alembic":
                return  # at the head already: nothing to upgrade, `_report` says who owns it
            raise SchemaConflict(_elsewhere(before, "upgrade"))
        command.upgrade(config, revision)

    return _run(url, prefix, _up)


def downgrade(url: str, prefix: str, revision: str = "-1") -> tuple[SchemaState, SchemaState]:
    """Undo our revision(s) down to ``revision`` (``base`` drops the tables)."""
    from alembic import command

    from migrate_cron.store.engine import missing_file

    if missing_file(url) is not None:
        state = _absent(url, prefix)
        return state, state

    def _down(config: Config) -> None:
        before: SchemaState = config.attributes["before"]
        if before.managed_elsewhere:
            raise SchemaConflict(_elsewhere(before, "downgrade"))
        if before.current:  # nothing recorded: nothing to undo
            command.downgrade(config, revision)

    return _run(url, prefix, _down)


def elsewhere_note(state: SchemaState) -> str:
    """What ``db current`` says about tables our version table does not record."""
    at = state.at[0]
    head = " (head)" if state.up_to_date else f", behind {', '.join(state.heads)}"
    if state.managed_by == "nothing":
        return (
            f"the tables exist (at {at}{head}) but no Alembic history records them "
            "(made by create_all?)"
        )
    owner = f"your own Alembic project (version table {', '.join(state.histories)})"
    if state.up_to_date:
        return (
            f"the tables are at {at}{head}, managed by {owner}; when migrate-cron adds a "
            "step, run `migrate-cron generate migration` in that project, then "
            "`alembic upgrade head`"
        )
    return f"the tables are at {at}{head}, managed by {owner} — {_catch_up(state)}"


def _catch_up(state: SchemaState) -> str:
    """The steps that bring the user's project to our head (both succeed as written)."""
    return (
        "run `alembic upgrade head` in that project (first `migrate-cron generate migration` "
        f"there if its history lacks {', '.join(state.heads)})"
    )


def _elsewhere(state: SchemaState, action: str) -> str:
    """Why ``db upgrade``/``downgrade`` leave the tables alone, and what to run instead."""
    if state.managed_by == "nothing":
        return (
            f"{state.database}: the migrate-cron tables exist but neither "
            f"{state.version_table} nor any Alembic version table records them (made by "
            f"create_all?); `migrate-cron db {action}` leaves them alone: drop them first, "
            "then `migrate-cron db upgrade`"
        )
    owner = f"your own Alembic project (version table {', '.join(state.histories)})"
    if action == "downgrade":
        return (
            f"{state.database}: the migrate-cron tables are managed by {owner}, not by "
            "`migrate-cron db`: downgrade them there with `alembic downgrade REV`"
        )
    return (
        f"{state.database}: the migrate-cron tables are at {state.at[0]}, managed by {owner}, "
        f"not by `migrate-cron db`: {_catch_up(state)}"
    )


def init_conflict(url: str, prefix: str) -> str | None:
    """Why ``alembic upgrade head`` in a project just made by ``generate migration --init``
    would fail on ``url`` (the database its env.py connects to): the tables are already
    there. None when they are not, or when the database cannot be read (then the upgrade
    itself will say why). A SQLite file that does not exist is not created to find out."""
    from migrate_cron.errors import DatabaseUnavailable
    from migrate_cron.store.engine import missing_file

    if missing_file(url) is not None:
        return None
    try:
        state = current(url, prefix)
    except (DatabaseUnavailable, SchemaConflict):
        return None
    if not state.found and not state.current:
        return None
    if state.managed_by == "migrate-cron":
        return (
            f"{state.database} already has the migrate-cron tables, from `migrate-cron db "
            "upgrade`: keep that way (delete the new Alembic directory and alembic.ini), or "
            "drop them with `migrate-cron db downgrade base` (their rows too), then "
            "`alembic upgrade head`"
        )
    return (
        f"{state.database} already has the migrate-cron tables ({elsewhere_note(state)}): "
        "delete the new Alembic directory and alembic.ini"
    )


def _absent(url: str, prefix: str) -> SchemaState:
    """The state of a SQLite file that does not exist, read without creating it."""
    from migrate_cron.config import validate_prefix
    from migrate_cron.generate.revision import SCHEMA_VERSION, revision_id
    from migrate_cron.store.engine import display_url

    prefix = validate_prefix(prefix)
    head = (revision_id(prefix, SCHEMA_VERSION),)
    return SchemaState(display_url(url), prefix, version_table(prefix), (), head, exists=False)


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
    from migrate_cron.store.engine import display_url, make_engine

    prefix = validate_prefix(prefix)
    engine = make_engine(url)
    safe_url = display_url(url)
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
                before = _state(conn, safe_url, prefix, table, heads)
                if action is not None:
                    config.attributes.update(connection=conn, before=before)
                    action(config)
                after = _state(conn, safe_url, prefix, table, heads)
                if action is not None and not after.current:
                    _drop_version_table(conn, table)
    except CommandError as exc:
        raise MigrateCronError(f"{safe_url}: {mask_url(str(exc))}") from None
    except sa_exc.DBAPIError as exc:
        raise _database_error(exc, safe_url, table) from None
    finally:
        engine.dispose()
    return before, after


def _state(
    conn: Connection, safe_url: str, prefix: str, table: str, heads: tuple[str, ...]
) -> SchemaState:
    from sqlalchemy import inspect

    names = set(inspect(conn).get_table_names())
    histories = _histories(conn, names)
    return SchemaState(
        safe_url,
        prefix,
        table,
        _recorded(conn, table),
        heads,
        found=_found(names, prefix),
        histories=histories,
        recorded_elsewhere=_ours_in(conn, histories, prefix),
    )


def _ours_in(conn: Connection, histories: tuple[str, ...], prefix: str) -> tuple[str, ...]:
    """Our step revisions that the other version tables record, oldest step first."""
    from migrate_cron.generate.revision import STEPS, revision_id

    recorded: set[str] = set()
    for table in histories:
        recorded.update(_recorded(conn, table))
    ours = [revision_id(prefix, step.version) for step in STEPS]
    return tuple(r for r in ours if r in recorded)


def _found(names: set[str], prefix: str) -> tuple[str, ...]:
    """The steps whose tables all exist, oldest first, up to the first step that is missing."""
    from migrate_cron.generate.revision import STEPS, revision_id
    from migrate_cron.store.schema import build_tables

    tables = build_tables(prefix)
    found: list[str] = []
    for step in STEPS:
        if not {t.name for t in step.tables(tables)} <= names:
            break
        found.append(revision_id(prefix, step.version))
    return tuple(found)


def _histories(conn: Connection, names: set[str]) -> tuple[str, ...]:
    """Alembic version tables other than ``migrate-cron db``'s (of any prefix): tables named
    like one whose only column is ``version_num``, as Alembic creates them."""
    from sqlalchemy import inspect

    inspector = inspect(conn)
    found = []
    for name in sorted(names):
        if "version" not in name.lower() or name.endswith("migrate_cron_alembic_version"):
            continue
        if [c["name"] for c in inspector.get_columns(name)] == ["version_num"]:
            found.append(name)
    return tuple(found)


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
