"""``enqueue_run`` for one cron slot through the DBAPI driver alone, without SQLAlchemy.

cron starts ``migrate-cron enqueue NAME`` every minute on every host, and the process lives for
one insert. Importing SQLAlchemy (and the dialect modules ``schema.py`` needs) cost ~270 ms of
the ~500 ms such a call took; this module runs the same write (``slot_write.py``, the
dialect's named statements, as the Store runs it) on the driver's own cursor, and imports only
the standard library, the driver and our light modules (``config``, ``errors``,
``store.dialects``, ``store.timeouts``, ``store.faults``, ``store.results``). An error message
borrows SQLAlchemy's URL rendering (``engine.display_url``) so that it reads exactly as the
Store's: only a failed call imports SQLAlchemy.

It serves exactly the call ``enqueue_slot`` makes: no payload, kind = the job's name, ref = the
slot. Same statements in the same transaction as the Store's, so the same locks in the same
order; the same clocks ("now" from Python on SQLite, from the server elsewhere); the same
connection recipe (the dialect module's ``connector``, beside its ``make_engine``) and
timeouts (``timeouts.py``). ``tests/contract/test_direct_contract.py`` runs both on every
backend and compares the rows column by column.

Whatever this module does not fully understand raises ``Unsupported`` with nothing committed,
and the caller (``store.open_slot_writer``) uses the Store: a URL form or query parameter we do
not map the way SQLAlchemy does, a missing driver, or a database error that is neither
"unavailable" nor "tables missing" (the transaction is rolled back, so the Store starts from
the same state and raises its own error).

Identifiers: the table prefix is validated (``config.validate_prefix``: letters, digits,
underscore) before it is put into the statement texts; every value is a parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any

from migrate_cron.config import mask_url
from migrate_cron.errors import DatabaseUnavailable, SchemaMissing
from migrate_cron.store.dialects import DIALECTS, Dialect, normalize_url
from migrate_cron.store.dialects.urls import Unsupported
from migrate_cron.store.faults import (
    dbapi_class,
    first_line,
    names_missing_table,
    read_only_server,
)
from migrate_cron.store.results import RunResult
from migrate_cron.store.slot_write import SlotWrite

__all__ = ["DirectWriter", "Unsupported", "open_writer"]


# --------------------------------------------------------------------------- the writer
class DirectWriter:
    """``enqueue_run`` and ``dispose``, as the producer uses a Store; one connection, opened
    on first use and kept for the spool's replays and the slot."""

    def __init__(self, url: str, dialect: Dialect, connect: Callable[[], Any], prefix: str) -> None:
        from migrate_cron.config import validate_prefix

        self.url = url
        self.dialect = dialect
        self.prefix = validate_prefix(prefix)
        self._connect = connect
        recipe = dialect.recipe()
        self._begin: str | None = recipe.BEGIN
        self._write = SlotWrite.of(recipe.STATEMENTS, dialect.stamp, self.prefix, None)
        self._conn: Any = None

    def enqueue_run(
        self, job_name: str, scheduled_for: datetime, *, max_attempts: int,
        skip_if_running: bool = False, hold_if_running: bool = False,
    ) -> RunResult:  # fmt: skip
        """Record the slot and enqueue its job once, in one transaction (``Store.enqueue_run``
        with no payload, kind = ``job_name``)."""
        with self._transaction() as cur:
            return self._write.run(
                cur, job_name, scheduled_for, max_attempts=max_attempts,
                skip_if_running=skip_if_running, hold_if_running=hold_if_running,
            )  # fmt: skip

    def dispose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            _quietly(conn.close)  # a broken connection: nothing to keep

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """A cursor in a transaction; driver errors become the Store's errors, word for word
        (``StoreBase.translate``), or ``Unsupported`` after a rollback."""
        try:
            if self._conn is None:
                self._conn = self._connect()
            conn = self._conn
            cur = conn.cursor()
            if self._begin:  # the driver's own BEGIN is off (the dialect's ``BEGIN``)
                cur.execute(self._begin)
            try:
                yield cur
            except BaseException:
                _quietly(lambda: cur.execute("ROLLBACK") if self._begin else None)
                _quietly(conn.rollback)
                raise
            if self._begin:
                cur.execute("COMMIT")
            else:
                conn.commit()
        except (DatabaseUnavailable, SchemaMissing, Unsupported):
            raise
        except ImportError as exc:  # no driver: the Store says so in its words
            raise Unsupported(f"no driver: {exc}") from exc
        except Exception as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: Exception) -> Exception:
        kind = dbapi_class(exc)
        if kind is None:
            raise exc  # not a driver error: a bug, shown as such
        text = first_line(exc)
        if kind in ("OperationalError", "InterfaceError", "ProgrammingError") and (
            names_missing_table(exc)
        ):
            return SchemaMissing(
                f"the queue tables are missing in {self._url_safe()} ({mask_url(text)}); "
                "run `migrate-cron db upgrade` first"
            )
        if kind in ("OperationalError", "InterfaceError") or read_only_server(exc):
            self.dispose()
            return DatabaseUnavailable(
                f"cannot use the database {self._url_safe()}: {mask_url(text)}"
            )
        self.dispose()
        return Unsupported(f"{type(exc).__name__}: {mask_url(text)}")

    def _url_safe(self) -> str:
        """The URL as the Store's messages print it (SQLAlchemy's rendering, password hidden).
        Only an error needs it, so SQLAlchemy's URL module is imported only then."""
        from migrate_cron.store.engine import display_url

        return display_url(self.url)


def _quietly(action: Callable[[], object]) -> None:
    """Clean-up after an error: the first error is the one to report."""
    with suppress(Exception):
        action()


# --------------------------------------------------------------------------- URLs
def open_writer(url: str, prefix: str) -> DirectWriter:
    """A writer for ``url``; raises ``Unsupported`` for any URL this module does not map
    exactly as ``engine.make_engine`` does (the dialect's ``connector`` reads it). Nothing
    connects until the first write. The writer keeps ``url`` as given, for its messages
    (``display_url``)."""
    typed, url = url, normalize_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep or "#" in rest:
        raise Unsupported(scheme)
    for dialect in DIALECTS.values():
        if scheme in dialect.direct_schemes:
            return DirectWriter(typed, dialect, dialect.recipe().connector(rest), prefix)
    raise Unsupported(scheme)
