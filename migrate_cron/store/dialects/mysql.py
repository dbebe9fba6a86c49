"""MySQL 8 and MariaDB 10.6+ (PyMySQL), one family: SKIP LOCKED claims, insert-if-absent
with a SAVEPOINT and ER_DUP_ENTRY caught.

Not ``INSERT IGNORE`` (it stores NULL as '' and truncates silently) and not a no-op ``ON
DUPLICATE KEY UPDATE`` (its rowcount cannot tell new from existing).

Engine: READ COMMITTED, which avoids next-key (gap) locks on the claim index; the ``utf8mb4``
connection character set (any other cannot carry all of a job's text; a URL asking for another
is refused); PyMySQL reads the server's greeting under ``read_timeout``, so that is the connect
limit until the connection is made, then the answer limit (``_answer_after``). Text columns
state ``utf8mb4`` and a binary collation (``COLLATIONS``). Its Store: ``mysql_store.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from migrate_cron.store.dialects.entry import ClaimIndex, Dialect, Stamp, Statements

if TYPE_CHECKING:
    from sqlalchemy import Select

CHARSET = "utf8mb4"
#: Binary collations: equality byte for byte, as on PostgreSQL and SQLite. A case-insensitive
#: one (the servers' defaults) would make ``ref="User-42"`` dedupe into ``"user-42"``.
#: MariaDB has a binary NO PAD collation; MySQL 8's ``utf8mb4_bin`` still ignores trailing
#: spaces (its NO PAD ``utf8mb4_0900_bin`` is not in MySQL 8.0.4–8.0.16, which we support).
COLLATIONS = {"mariadb": "utf8mb4_nopad_bin", "mysql": "utf8mb4_bin"}
#: MySQL/MariaDB's duplicate-key error.
ER_DUP_ENTRY = 1062

DIALECT = Dialect(
    name="mysql",
    title="MySQL/MariaDB",
    backends=("mysql", "mariadb"),
    module=__name__,
    missing_table_markers=("doesn't exist", "1146"),
    store="migrate_cron.store.dialects.mysql_store:MySQLStore",
    drivers={"mysql": "mysql+pymysql", "mariadb": "mariadb+pymysql"},
    driver_logger="pymysql",
    direct_schemes=("mysql+pymysql", "mariadb+pymysql"),
    claim_index=ClaimIndex.STATE_FIRST,
    stamp=Stamp.NAIVE,
    # Server errors that refuse a value, whatever DB-API class the driver gives them: 1153
    # packet over max_allowed_packet, 1366 incorrect string value, 1406 data too long, 3140
    # invalid JSON text (MySQL), 3819 CHECK constraint violated (MySQL), 4025 CONSTRAINT
    # failed (MariaDB: a JSON column's ``json_valid`` check).
    value_errors=frozenset({1153, 1366, 1406, 3140, 3819, 4025}),
    collations=COLLATIONS,
)

#: The start of the current hour on the server's clock, UTC (UTC_TIMESTAMP is fixed for the
#: statement, so its two reads agree).
HOUR = "TIMESTAMP(DATE(UTC_TIMESTAMP()), MAKETIME(HOUR(UTC_TIMESTAMP()), 0, 0))"

STATEMENTS = Statements(
    running="SELECT id FROM {p}job WHERE kind = %s AND state = {running} "
    "AND locked_until > {now} LIMIT 1",
    insert_run="INSERT INTO {p}scheduled_runs (job_name, scheduled_for, enqueued_at, outcome) "
    "VALUES (%s, %s, {now}, %s)",
    existing_run="SELECT job_id, outcome FROM {p}scheduled_runs "
    "WHERE job_name = %s AND scheduled_for = %s",
    insert_job="INSERT INTO {p}job (kind, ref, payload, state, attempts, max_attempts, run_at, "
    "scheduled_for, created_at) VALUES (%s, %s, %s, {open}, 0, %s, {now}, %s, {now})",
    existing_job="SELECT id FROM {p}job WHERE kind = %s AND ref = %s",
    link="UPDATE {p}scheduled_runs SET job_id = %s WHERE id = %s",
    tally="INSERT INTO {p}job_tallies (kind, what, period_start, count) "
    "VALUES (%s, %s, {hour}, %s) "
    "ON DUPLICATE KEY UPDATE count = count + VALUES(count)",
    marker="%s",
    server_now="UTC_TIMESTAMP(6)",
    server_hour=HOUR,
    insert_returns_id=False,
    dup_key_error=ER_DUP_ENTRY,
)

BEGIN = None
_PARAMS = frozenset({"charset"})


def column_types(dialect: Dialect) -> dict[str, dict[str, Any]]:
    """Per backend: microsecond DATETIMEs (naive UTC), and every text column in ``utf8mb4``
    with the backend's binary collation (without them a column takes the server's default,
    ``latin1`` on a server started without a config, and a job that printed ``✓`` could not be
    recorded: error 1366). Tables state both too, for a column added by hand."""
    from sqlalchemy.dialects import mysql

    return {
        backend: {
            "timestamp": mysql.DATETIME(fsp=6),
            "string": lambda n, c=collation: mysql.VARCHAR(n, charset=CHARSET, collation=c),
            "text": lambda c=collation: mysql.TEXT(charset=CHARSET, collation=c),
            "table_options": {f"{backend}_charset": CHARSET, f"{backend}_collate": collation},
        }
        for backend, collation in dialect.collations.items()
    }


def force_index(stmt: Select[Any], table: Any, index: str) -> Select[Any]:
    """``FORCE INDEX``: MariaDB reads ``kind IN (…) AND state = … AND finished_at >= …``
    through ``(state, finished_at)`` and a row lookup each (~600 ms for 143k rows) rather
    than inside ``(kind, state, finished_at)`` (~60 ms) unless told."""
    for backend in DIALECT.backends:
        stmt = stmt.with_hint(table, f"FORCE INDEX ({index})", dialect_name=backend)
    return stmt


def utf8mb4_charset(asked: Any) -> str:
    """The connection character set: ``utf8mb4``, whatever the server's default (``latin1``
    on one started without a config). A URL naming another is refused rather than followed: a
    ``latin1`` or ``utf8`` (3-byte) connection cannot send ``✓`` or an emoji."""
    if asked not in (None, CHARSET):
        from migrate_cron.errors import UsageError

        raise UsageError(f"charset={asked} in the database URL: migrate-cron needs utf8mb4")
    return CHARSET


def make_engine(
    url: str, parsed: Any, bound: Any, kwargs: dict[str, Any], server_engine: Any
) -> Any:
    """The engine: our options, then ``server_engine`` (``engine.py``'s common part)."""

    connect_args = dict(kwargs.pop("connect_args", {}))
    kwargs.setdefault("isolation_level", "READ COMMITTED")
    connect_args["charset"] = utf8mb4_charset(parsed.query.get("charset"))
    kwargs.setdefault("pool_recycle", 3600)
    connect_args.setdefault("connect_timeout", bound.connect)
    own_answer = "read_timeout" not in connect_args
    if own_answer:  # the greeting is read under the connect limit (``_answer_after``)
        connect_args["read_timeout"] = connect_args["write_timeout"] = bound.connect
    kwargs["connect_args"] = connect_args
    engine = server_engine(url, kwargs, idle=between_transactions)
    if own_answer:
        _answer_after(engine, bound.answer)
    return engine


#: ``SERVER_STATUS_IN_TRANS``, bit 0 of the status flags in every OK and EOF packet of the
#: MySQL client/server protocol (MySQL's include/mysql_com.h; MariaDB's protocol is the same).
IN_TRANSACTION = 1


def between_transactions(dbapi_conn: Any) -> bool:
    """Whether PyMySQL's connection last heard from the server that no transaction is open.

    ``server_status`` is the flags of the last OK or EOF packet (a COMMIT's, a ROLLBACK's, a
    result's end). An error reply carries none, so after a failed statement the flags are an
    earlier answer's — but SQLAlchemy rolls back itself a transaction that failed or that is
    still open when the connection closes, and then the pool skips its own rollback: the
    flags are read only after SQLAlchemy ended the transaction, by COMMIT or ROLLBACK, whose
    own answer set them. Another driver's connection (no ``server_status``) is rolled back
    as before."""
    status = getattr(dbapi_conn, "server_status", None)
    return isinstance(status, int) and not status & IN_TRANSACTION


def _answer_after(engine: Any, answer: float) -> None:
    """Once a PyMySQL connection is made, its reads and writes wait up to the answer limit
    (its greeting was read under the connect limit). PyMySQL has no public setter: these are
    the attributes its constructor stores ``read_timeout`` and ``write_timeout`` in and every
    read and write applies (PyMySQL 1.x; ``tests/store/test_timeouts.py`` checks it)."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect", insert=True)
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn._read_timeout = dbapi_conn._write_timeout = answer or None


def connector(rest: str) -> Callable[[], Any]:
    """The direct writer's connection for ``mysql+pymysql://user:password@host:port/database
    [?charset=…]``, read as SQLAlchemy reads it, set up as ``make_engine``'s (READ COMMITTED,
    timeouts)."""
    from urllib.parse import parse_qsl, unquote

    from migrate_cron.store import timeouts
    from migrate_cron.store.dialects.urls import Unsupported, check_params

    netloc, _, tail = rest.partition("/")
    database, _, query = tail.partition("?")
    check_params(query, _PARAMS)
    userinfo, at, hostport = netloc.rpartition("@")
    if "[" in hostport or "%" in hostport or "/" in database:
        raise Unsupported("mysql URL")
    host, colon, port = hostport.partition(":")
    if colon and not port.isdigit():
        raise Unsupported("mysql URL")
    args: dict[str, Any] = dict(parse_qsl(query))
    if args.setdefault("charset", CHARSET) != CHARSET:
        raise Unsupported("charset")  # the Store refuses it in one line (``utf8mb4_charset``)
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
        # ``_answer_after`` (PyMySQL reads the greeting under ``read_timeout``).
        args["connect_timeout"] = timeouts.connect_timeout()
        args["read_timeout"] = args["write_timeout"] = args["connect_timeout"]
        conn = pymysql.connect(**args)
        conn._read_timeout = conn._write_timeout = timeouts.io_timeout() or None
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        conn.commit()
        return conn

    return connect
