"""``enqueue_run`` for one cron slot through the DBAPI driver alone, without SQLAlchemy.

cron starts ``migrate-cron enqueue NAME`` every minute on every host, and the process lives for
one insert. Importing SQLAlchemy (and the dialect modules ``schema.py`` needs) cost ~270 ms of
the ~500 ms such a call took; this module writes the same rows with ``sqlite3``, psycopg 3 or
PyMySQL directly, and imports only the standard library, the driver and our light modules
(``config``, ``errors``, ``store.timeouts``, ``store.faults``, ``store.results``). An error
message borrows SQLAlchemy's URL rendering (``engine.display_url``) so that it reads exactly as
the Store's: only a failed call imports SQLAlchemy.

It is a second spelling of ``Store.enqueue_run`` (``runs.py``, with the dialect hooks of
``sqlite.py``, ``postgresql.py`` and ``mysql.py``) for exactly the call ``enqueue_slot`` makes:
no payload, kind = the job's name, ref = the slot, outcome ``enqueued`` unless
``skip_if_running`` finds a live run. Same statements in the same order, so the same locks in
the same order: the slot row insert-if-absent on (job_name, scheduled_for), the job row
insert-if-absent on (kind, ref) (with its NOTIFY on PostgreSQL), then the link, in one
transaction; the same clocks ("now" from Python on SQLite, from the server elsewhere); the same
connection recipe (``engine.py``) and timeouts (``timeouts.py``).
``tests/contract/test_direct_contract.py`` runs both on every backend and compares the rows
column by column.

Whatever this module does not fully understand raises ``Unsupported`` with nothing committed,
and the caller (``store.open_slot_writer``) uses the Store: a URL form or query parameter we do
not map the way SQLAlchemy does, a missing driver, or a database error that is neither
"unavailable" nor "tables missing" (the transaction is rolled back, so the Store starts from
the same state and raises its own error).

Identifiers: the table prefix is validated (``config.validate_prefix``: letters, digits,
underscore) before it is put into the statement texts below; every value is a parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from migrate_cron.config import mask_url, normalize_url, validate_prefix
from migrate_cron.errors import DatabaseUnavailable, SchemaMissing
from migrate_cron.store import timeouts
from migrate_cron.store.faults import (
    dbapi_class,
    first_line,
    names_missing_table,
    read_only_server,
)
from migrate_cron.store.keys import slot_ref, wake_channel
from migrate_cron.store.results import RunResult


class Unsupported(Exception):
    """This call needs the Store (nothing was written)."""


#: libpq connection parameters a PostgreSQL URL may carry (SQLAlchemy hands them to psycopg as
#: they are; we hand the URL to libpq). Any other parameter goes to the Store, and so does a
#: ``host`` that is not a socket directory (SQLAlchemy splits ``host=h:port`` itself).
_PG_PARAMS = frozenset(
    {
        "application_name", "channel_binding", "client_encoding", "connect_timeout",
        "gssencmode", "host", "keepalives", "keepalives_count",
        "keepalives_idle", "keepalives_interval", "krbsrvname", "load_balance_hosts",
        "options", "passfile", "require_auth", "service", "sslcert",
        "sslcompression", "sslcrl", "sslkey", "sslmode", "sslnegotiation", "sslpassword",
        "sslrootcert", "target_session_attrs", "tcp_user_timeout",
    }
)  # fmt: skip
_MYSQL_PARAMS = frozenset({"charset"})


# --------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class _Sql:
    """The statements of one dialect for one prefix; ``{p}`` stands for the prefix. Values
    are driver parameters: ``?`` (sqlite3) or ``%s`` (psycopg, PyMySQL)."""

    #: A live run of the kind (``skip_if_running``); a dead worker's run does not count.
    running: str
    #: The slot row, insert-if-absent (returns its id, or nothing when the slot existed).
    insert_run: str
    existing_run: str
    #: The job row, insert-if-absent on (kind, ref); PostgreSQL's also sends the NOTIFY.
    insert_job: str
    existing_job: str
    link: str

    def render(self, prefix: str) -> _Sql:
        prefix = validate_prefix(prefix)
        return _Sql(*(text.replace("{p}", prefix) for text in self.__dict__.values()))


_SQLITE = _Sql(
    running="SELECT id FROM {p}job WHERE kind = ? AND state = 'running' AND locked_until > ? "
    "LIMIT 1",
    insert_run="INSERT INTO {p}scheduled_runs (job_name, scheduled_for, enqueued_at, outcome) "
    "VALUES (?, ?, ?, ?) ON CONFLICT (job_name, scheduled_for) DO NOTHING RETURNING id",
    existing_run="SELECT job_id, outcome FROM {p}scheduled_runs "
    "WHERE job_name = ? AND scheduled_for = ?",
    insert_job="INSERT INTO {p}job (kind, ref, payload, state, attempts, max_attempts, run_at, "
    "scheduled_for, created_at) VALUES (?, ?, 'null', 'open', 0, ?, ?, ?, ?) "
    "ON CONFLICT (kind, ref) DO NOTHING RETURNING id",
    existing_job="SELECT id FROM {p}job WHERE kind = ? AND ref = ?",
    link="UPDATE {p}scheduled_runs SET job_id = ? WHERE id = ?",
)
# PostgreSQL's job insert is PostgresStore._build_enqueue_stmt for this call: run_at is
# now() + 0 s, and pg_notify is sent only for a row that was inserted.
_POSTGRESQL = _Sql(
    running="SELECT id FROM {p}job WHERE kind = %s AND state = 'running' AND locked_until > now() "
    "LIMIT 1",
    insert_run="INSERT INTO {p}scheduled_runs (job_name, scheduled_for, enqueued_at, outcome) "
    "VALUES (%s, %s, now(), %s) ON CONFLICT (job_name, scheduled_for) DO NOTHING RETURNING id",
    existing_run="SELECT job_id, outcome FROM {p}scheduled_runs "
    "WHERE job_name = %s AND scheduled_for = %s",
    insert_job="WITH ins AS (INSERT INTO {p}job (kind, ref, payload, state, attempts, "
    "max_attempts, run_at, scheduled_for, created_at) VALUES (%s, %s, CAST('null' AS JSONB), "
    "'open', 0, %s, now(), %s, now()) ON CONFLICT (kind, ref) DO NOTHING RETURNING id, kind) "
    "SELECT ins.id, pg_notify(%s, ins.kind) FROM ins",
    existing_job="SELECT id FROM {p}job WHERE kind = %s AND ref = %s",
    link="UPDATE {p}scheduled_runs SET job_id = %s WHERE id = %s",
)
# MySQL/MariaDB: no ON CONFLICT; a SAVEPOINT around a plain INSERT and ER_DUP_ENTRY caught, as
# MySQLStore._insert_if_absent does (never INSERT IGNORE).
_MYSQL = _Sql(
    running="SELECT id FROM {p}job WHERE kind = %s AND state = 'running' "
    "AND locked_until > UTC_TIMESTAMP(6) LIMIT 1",
    insert_run="INSERT INTO {p}scheduled_runs (job_name, scheduled_for, enqueued_at, outcome) "
    "VALUES (%s, %s, UTC_TIMESTAMP(6), %s)",
    existing_run="SELECT job_id, outcome FROM {p}scheduled_runs "
    "WHERE job_name = %s AND scheduled_for = %s",
    insert_job="INSERT INTO {p}job (kind, ref, payload, state, attempts, max_attempts, run_at, "
    "scheduled_for, created_at) VALUES (%s, %s, 'null', 'open', 0, %s, UTC_TIMESTAMP(6), %s, "
    "UTC_TIMESTAMP(6))",
    existing_job="SELECT id FROM {p}job WHERE kind = %s AND ref = %s",
    link="UPDATE {p}scheduled_runs SET job_id = %s WHERE id = %s",
)
_ER_DUP_ENTRY = 1062


# --------------------------------------------------------------------------- the writer
class DirectWriter:
    """``enqueue_run`` and ``dispose``, as the producer uses a Store; one connection, opened
    on first use and kept for the spool's replays and the slot."""

    def __init__(self, url: str, family: str, connect: Callable[[], Any], prefix: str) -> None:
        self.url = url
        self.family = family
        self.prefix = prefix
        self._connect = connect
        self._sql = {"sqlite": _SQLITE, "postgresql": _POSTGRESQL, "mysql": _MYSQL}[family].render(
            prefix
        )
        self._conn: Any = None

    def enqueue_run(
        self, job_name: str, scheduled_for: datetime, *, max_attempts: int,
        skip_if_running: bool = False,
    ) -> RunResult:  # fmt: skip
        """Record the slot and enqueue its job once, in one transaction (``Store.enqueue_run``
        with no payload, kind = ``job_name``)."""
        slot = scheduled_for.astimezone(UTC)
        with self._transaction() as cur:
            return self._enqueue_run(cur, job_name, slot, max_attempts, skip_if_running)

    def dispose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            _quietly(conn.close)  # a broken connection: nothing to keep

    # ------------------------------------------------------------------ per statement
    def _enqueue_run(
        self, cur: Any, name: str, slot: datetime, max_attempts: int, skip_if_running: bool
    ) -> RunResult:
        sql = self._sql
        outcome = "enqueued"
        if skip_if_running and self._fetch(cur, sql.running, (name, *self._now())) is not None:
            outcome = "skipped"
        run = (name, self._stamp(slot), *self._now(), outcome)
        run_id = self._insert(cur, sql.insert_run, run)
        if run_id is None:
            job_id, was = self._fetch(cur, sql.existing_run, (name, self._stamp(slot)))
            return RunResult(False, job_id, was)
        if outcome == "skipped":
            return RunResult(True, None, "skipped")
        ref = slot_ref(slot)
        if self.family == "postgresql":
            channel = wake_channel(self.prefix)
            row = self._fetch(cur, sql.insert_job, (name, ref, max_attempts, slot, channel))
            job_id = None if row is None else row[0]
        else:
            job = (name, ref, max_attempts, *self._now(), self._stamp(slot), *self._now())
            job_id = self._insert(cur, sql.insert_job, job)
        if job_id is None:  # (kind, ref) was there: read it in a statement of its own
            job_id = self._fetch(cur, sql.existing_job, (name, ref))[0]
        cur.execute(sql.link, (job_id, run_id))
        return RunResult(True, int(job_id), "enqueued")

    def _now(self) -> tuple[str, ...]:
        """ "now" as parameters: SQLite's clock is this process's; the servers use their own
        (``now()``, ``UTC_TIMESTAMP(6)`` in the statement text), so no parameter."""
        if self.family == "sqlite":
            return (self._stamp(datetime.now(UTC)),)
        return ()

    def _stamp(self, t: datetime) -> Any:
        """A timestamp as the Store binds it (``schema.UTCDateTime``): aware on PostgreSQL,
        naive UTC on MySQL, and SQLAlchemy's SQLite text form elsewhere."""
        if self.family == "postgresql":
            return t
        naive = t.astimezone(UTC).replace(tzinfo=None)
        if self.family == "mysql":
            return naive
        return naive.strftime("%Y-%m-%d %H:%M:%S.%f")

    def _fetch(self, cur: Any, statement: str, params: tuple[Any, ...]) -> Any:
        cur.execute(statement, params)
        return cur.fetchone()

    def _insert(self, cur: Any, statement: str, params: tuple[Any, ...]) -> Any | None:
        """Insert-if-absent: the new row's id, or None when the unique key existed."""
        if self.family != "mysql":
            row = self._fetch(cur, statement, params)
            return None if row is None else row[0]
        cur.execute("SAVEPOINT migrate_cron_direct")
        try:
            cur.execute(statement, params)
        except Exception as exc:
            if _error_code(exc) != _ER_DUP_ENTRY:
                raise
            cur.execute("ROLLBACK TO SAVEPOINT migrate_cron_direct")
            return None
        new_id = cur.lastrowid  # before RELEASE: every statement resets it
        cur.execute("RELEASE SAVEPOINT migrate_cron_direct")
        return new_id

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
            if self.family == "sqlite":
                cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                _quietly(lambda: cur.execute("ROLLBACK") if self.family == "sqlite" else None)
                _quietly(conn.rollback)
                raise
            if self.family == "sqlite":
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


def _error_code(exc: BaseException) -> Any:
    args = getattr(exc, "args", ())
    return args[0] if args else None


def _quietly(action: Callable[[], object]) -> None:
    """Clean-up after an error: the first error is the one to report."""
    with suppress(Exception):
        action()


# --------------------------------------------------------------------------- URLs
def open_writer(url: str, prefix: str) -> DirectWriter:
    """A writer for ``url``; raises ``Unsupported`` for any URL this module does not map
    exactly as ``engine.make_engine`` does. Nothing connects until the first write. The
    writer keeps ``url`` as given, for its messages (``display_url``)."""
    typed, url = url, normalize_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep or "#" in rest:
        raise Unsupported(scheme)
    if scheme == "sqlite":
        return DirectWriter(typed, "sqlite", _sqlite_connector(rest), prefix)
    if scheme == "postgresql+psycopg":
        return DirectWriter(typed, "postgresql", _postgresql_connector(rest), prefix)
    if scheme in ("mysql+pymysql", "mariadb+pymysql"):
        return DirectWriter(typed, "mysql", _mysql_connector(rest), prefix)
    raise Unsupported(scheme)


def _sqlite_connector(rest: str) -> Callable[[], Any]:
    """``sqlite:///relative`` or ``sqlite:////absolute``: a file, no query, no escapes."""
    path = rest[1:] if rest.startswith("/") else ""
    if not path or path == ":memory:" or any(c in path for c in "?%"):
        raise Unsupported("sqlite URL")

    def connect() -> Any:
        import sqlite3

        conn = sqlite3.connect(path, timeout=timeouts.SQLITE_BUSY_TIMEOUT_MS / 1000)
        conn.isolation_level = None  # we emit BEGIN IMMEDIATE ourselves, as engine.py does
        conn.execute(f"PRAGMA busy_timeout = {timeouts.SQLITE_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    return connect


def _postgresql_connector(rest: str) -> Callable[[], Any]:
    """The URL goes to libpq as it is (``postgresql://…``): libpq reads the user, host, port,
    database, ``~/.pgpass`` and ``PG*`` variables as it does under SQLAlchemy; the connect
    timeout and statement timeout are set as ``engine.py`` sets them (they override the URL's).
    A primary and its replicas (``?host=h1:p1&host=h2:p2``, SQLAlchemy's form, which
    ``config.normalize_url`` makes of libpq's) go to libpq as its own host list."""
    location, _, query = rest.partition("?")
    port = location.partition("/")[0].rpartition("@")[2].partition(":")[2]
    if any(c in location for c in ",[") or "+" in query or not (port.isdigit() or not port):
        raise Unsupported("postgresql URL")  # several hosts, IPv6, '+' read as space, bad port
    pairs = _check_params(query, _PG_PARAMS, repeatable=frozenset({"host"}))
    hosts = [value for key, value in pairs if key == "host"]
    if len(hosts) > 1 or any(":" in h for h in hosts):
        conninfo = _libpq_host_list(location, hosts, [(k, v) for k, v in pairs if k != "host"])
    else:
        if hosts and not (hosts[0].startswith("/") and "," not in hosts[0]):
            raise Unsupported("postgresql host parameter")
        conninfo = f"postgresql://{rest}"

    def connect() -> Any:
        import psycopg

        extra: dict[str, Any] = {"connect_timeout": timeouts.connect_timeout()}
        if options := timeouts.statement_options():
            extra["options"] = options
        return psycopg.connect(conninfo, **extra)

    return connect


#: A host in SQLAlchemy's multi-host form: a name or IPv4 address, and a port or none (its
#: ``_split_multihost_from_url`` splits on the colon; libpq then picks the default port).
_HOST_TOKEN = re.compile(r"[A-Za-z0-9.\-]+(?::[0-9]+)?")


def _libpq_host_list(location: str, hosts: list[str], rest: list[tuple[str, str]]) -> str:
    """``postgresql://user@h1:p1,h2:p2/db?…``: libpq's URI for what SQLAlchemy passes as
    ``host=h1,h2 port=p1,p2`` — each host keeps its port, tried in order."""
    from urllib.parse import quote, urlencode

    userinfo, at, hostport = location.partition("/")[0].rpartition("@")
    path = location.partition("/")[2]
    if hostport or not all(_HOST_TOKEN.fullmatch(h) for h in hosts):
        raise Unsupported("postgresql host list")
    if any(k == "port" for k, _ in rest):
        raise Unsupported("postgresql host list with port=")  # SQLAlchemy refuses the mix
    query = urlencode(rest, quote_via=quote)
    return f"postgresql://{userinfo}{at}{','.join(hosts)}/{path}" + (f"?{query}" if query else "")


def _mysql_connector(rest: str) -> Callable[[], Any]:
    """``mysql+pymysql://user:password@host:port/database[?charset=…]``, read as SQLAlchemy
    reads it, connected as ``engine.py`` connects (READ COMMITTED, timeouts)."""
    from urllib.parse import parse_qsl, unquote

    netloc, _, tail = rest.partition("/")
    database, _, query = tail.partition("?")
    _check_params(query, _MYSQL_PARAMS)
    userinfo, at, hostport = netloc.rpartition("@")
    if "[" in hostport or "%" in hostport or "/" in database:
        raise Unsupported("mysql URL")
    host, colon, port = hostport.partition(":")
    if colon and not port.isdigit():
        raise Unsupported("mysql URL")
    args: dict[str, Any] = dict(parse_qsl(query))
    if args.setdefault("charset", "utf8mb4") != "utf8mb4":
        raise Unsupported("charset")  # the Store refuses it in one line (engine.py)
    if at:
        user, has_password, password = userinfo.partition(":")
        args["user"] = unquote(user)
        if has_password:
            args["password"] = unquote(password)
    if host:
        args["host"] = host
    if port:
        args["port"] = int(port)
    if database:
        args["database"] = unquote(database)

    def connect() -> Any:
        import pymysql
        from pymysql.constants import CLIENT

        args["client_flag"] = CLIENT.FOUND_ROWS  # as SQLAlchemy's MySQL dialects
        # The greeting is read under the connect limit, then the I/O limit applies, as in
        # ``engine._answer_after`` (PyMySQL reads the greeting under ``read_timeout``).
        args["connect_timeout"] = timeouts.connect_timeout()
        args["read_timeout"] = args["write_timeout"] = args["connect_timeout"]
        conn = pymysql.connect(**args)
        conn._read_timeout = conn._write_timeout = timeouts.io_timeout() or None
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        conn.commit()
        return conn

    return connect


def _check_params(
    query: str, known: frozenset[str], repeatable: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """The query's (name, value) pairs; ``Unsupported`` unless each name is ``known`` and
    given once (``repeatable`` ones: any number of times)."""
    from urllib.parse import parse_qsl

    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise Unsupported("query string") from None
    names = [k for k, _ in pairs if k not in repeatable]
    if len(set(names)) != len(names) or not {k for k, _ in pairs} <= known:
        raise Unsupported("query parameter")
    return pairs
