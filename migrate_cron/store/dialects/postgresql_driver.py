"""PostgreSQL's enqueue past SQLAlchemy's execute path: one compiled statement run on psycopg's
cursor of a pooled connection, with SQLAlchemy's errors and invalidation, and the test of when
that is allowed (the store's own autocommit connection, nothing listening to statements)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

#: The execution option ``_producer_connection`` sets on the autocommit connection it opened.
OWN_AUTOCOMMIT = "migrate_cron_own_autocommit"


def driver_may_run(conn: Connection) -> bool:
    """Whether ``conn`` is the store's own autocommit connection and nothing would miss a
    statement run past SQLAlchemy: no event listener (``before_cursor_execute``,
    ``handle_error``: tracing, tests capturing statements), no SQL echo, no schema translation.
    Otherwise SQLAlchemy's execute path runs, as before."""
    options = conn.get_execution_options()
    # SQLAlchemy's own flags (private names, stable through 2.0 and 2.1); a version without
    # one of them reads as "has events", which keeps SQLAlchemy's path.
    flags = (conn, conn.engine, conn.dialect)
    return bool(
        options.get(OWN_AUTOCOMMIT)
        and "schema_translate_map" not in options
        and not any(getattr(owner, "_has_events", True) for owner in flags)
        and not getattr(conn, "_echo", True)
    )


class DriverStatement:
    """A Core statement compiled once for psycopg, run on the cursor of a pooled connection.

    What SQLAlchemy's execute path adds per call to a statement it already has in its compiled
    cache (cache lookup, execution context, result object) cost as much client CPU as the
    driver's own work. This keeps what matters of that path: the compiled text and the literal
    parameters SQLAlchemy generated (``param_1`` …), the types' bind processors (``UTCDateTime``
    refuses naive datetimes and converts to UTC) applied per call, and on error the same
    exception (``DBAPIError.instance``, parameters hidden when the engine hides them) and the
    same invalidation of a broken connection and of its pool generation, so the pool does not
    hand it, nor its siblings from before a server restart, out again.
    Not kept: engine events and SQL echo (``driver_may_run`` falls back to SQLAlchemy then).
    """

    def __init__(self, stmt: ClauseElement, dialect: Dialect) -> None:
        compiled = stmt.compile(dialect=dialect)
        if (
            not isinstance(compiled, SQLCompiler)
            or compiled.positional
            or (compiled.post_compile_params or compiled.literal_execute_params)
        ):
            raise ValueError("DriverStatement needs named parameters rendered at compile time")
        self.sql = compiled.string
        self._dialect = dialect
        #: Literal values SQLAlchemy bound itself, already processed.
        self._fixed: dict[str, Any] = {}
        #: Bind processors of the per-call parameters that have one.
        self._processors: dict[str, Callable[[Any], Any]] = {}
        for bind, name in compiled.bind_names.items():
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.required:
                if process is not None:
                    self._processors[name] = process
            else:
                value = bind.effective_value
                self._fixed[name] = process(value) if process is not None else value

    def execute(self, conn: Connection, values: Mapping[str, Any]) -> Any | None:
        """Run with ``values`` (every required parameter) on ``conn``'s psycopg connection, in
        its autocommit mode; return the first row or None."""
        params = {**self._fixed, **values}
        try:
            for name, process in self._processors.items():
                params[name] = process(params[name])
        except Exception as exc:  # as SQLAlchemy: a StatementError naming the cause
            raise self._wrapped(conn, exc, params, disconnect=False) from exc
        driver: Any = conn.connection.driver_connection
        cursor: Any = None
        try:
            cursor = driver.cursor()
            try:
                cursor.execute(self.sql, params)
                return cursor.fetchone()
            finally:
                cursor.close()
        except self._dialect.loaded_dbapi.Error as exc:
            disconnect = self._dialect.is_disconnect(exc, driver, cursor)
            wrapped = self._wrapped(conn, exc, params, disconnect=disconnect)
            if disconnect:  # what Connection._handle_dbapi_exception does
                conn.engine.pool._invalidate(conn.connection, exc)
                conn.invalidate(exc)
            raise wrapped from exc
        except BaseException as exc:
            if not isinstance(exc, Exception):  # interrupted mid-statement: state unknown
                conn.invalidate(exc)
            raise

    def _wrapped(
        self, conn: Connection, exc: Exception, params: dict[str, Any], *, disconnect: bool
    ) -> BaseException:
        return sa_exc.DBAPIError.instance(
            self.sql,
            params,
            exc,
            self._dialect.loaded_dbapi.Error,
            hide_parameters=conn.engine.hide_parameters,
            connection_invalidated=disconnect,
            dialect=self._dialect,
        )
