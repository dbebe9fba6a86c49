"""PostgreSQL (psycopg 3): SKIP LOCKED claims, LISTEN/NOTIFY wake-ups, partial indexes.

Engine: libpq's ``connect_timeout`` bounds connecting and the login; libpq has no read
timeout, so ``deadline.py``'s watchdog bounds an answer; ``MIGRATE_CRON_STATEMENT_TIMEOUT``
becomes the server's ``statement_timeout``; a session on a server that takes no writes counts
as a lost connection (``_read_only_means_disconnected``). Its Store: ``postgresql_store.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from migrate_cron.store.dialects.entry import ClaimIndex, Dialect, Stamp, Statements

DIALECT = Dialect(
    name="postgresql",
    title="PostgreSQL",
    backends=("postgresql",),
    module=__name__,
    missing_table_markers=("does not exist", "undefinedtable"),
    store="migrate_cron.store.dialects.postgresql_store:PostgresStore",
    drivers={"postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg"},
    driver_logger="psycopg",
    direct_schemes=("postgresql+psycopg",),
    host_list=True,
    claim_index=ClaimIndex.PARTIAL,
    row_claim_index=ClaimIndex.PARTIAL,
    stamp=Stamp.AWARE,
)

# The job insert sends the wake-up only for a row that was inserted (as the Store's
# ``enqueue``); run_at is "now".
STATEMENTS = Statements(
    running="SELECT id FROM {p}job WHERE kind = %s AND state = {running} AND locked_until > {now} "
    "LIMIT 1",
    insert_run="INSERT INTO {p}scheduled_runs (job_name, scheduled_for, enqueued_at, outcome) "
    "VALUES (%s, %s, {now}, %s) ON CONFLICT (job_name, scheduled_for) DO NOTHING RETURNING id",
    existing_run="SELECT job_id, outcome FROM {p}scheduled_runs "
    "WHERE job_name = %s AND scheduled_for = %s",
    insert_job="WITH ins AS (INSERT INTO {p}job (kind, ref, payload, state, attempts, "
    "max_attempts, run_at, scheduled_for, created_at) VALUES (%s, %s, CAST(%s AS JSONB), "
    "{open}, 0, %s, {now}, %s, {now}) ON CONFLICT (kind, ref) DO NOTHING RETURNING id, kind) "
    "SELECT ins.id, pg_notify(%s, ins.kind) FROM ins",
    existing_job="SELECT id FROM {p}job WHERE kind = %s AND ref = %s",
    link="UPDATE {p}scheduled_runs SET job_id = %s WHERE id = %s",
    tally="INSERT INTO {p}job_tallies (kind, what, period_start, count) "
    "VALUES (%s, %s, {hour}, %s) "
    "ON CONFLICT (kind, what, period_start) DO UPDATE SET count = {p}job_tallies.count + "
    "EXCLUDED.count",
    marker="%s",
    server_now="now()",
    notifies=True,
    server_hour="to_timestamp(floor(extract(epoch FROM now()) / 3600) * 3600)",
)

#: The direct writer's transactions begin with the driver's own (implicit) BEGIN.
BEGIN = None

#: libpq connection parameters a URL may carry (SQLAlchemy hands them to psycopg as they are;
#: the direct writer hands the URL to libpq). Any other parameter goes to the Store, and so
#: does a ``host`` that is not a socket directory (SQLAlchemy splits ``host=h:port`` itself).
_PARAMS = frozenset(
    {
        "application_name", "channel_binding", "client_encoding", "connect_timeout",
        "gssencmode", "host", "keepalives", "keepalives_count",
        "keepalives_idle", "keepalives_interval", "krbsrvname", "load_balance_hosts",
        "options", "passfile", "require_auth", "service", "sslcert",
        "sslcompression", "sslcrl", "sslkey", "sslmode", "sslnegotiation", "sslpassword",
        "sslrootcert", "target_session_attrs", "tcp_user_timeout",
    }
)  # fmt: skip


def column_types(dialect: Dialect) -> dict[str, dict[str, Any]]:
    """The payload is JSONB (indexable, compact)."""
    from sqlalchemy.dialects import postgresql

    return {backend: {"payload": postgresql.JSONB()} for backend in dialect.backends}


def make_engine(
    url: str, parsed: Any, bound: Any, kwargs: dict[str, Any], server_engine: Any
) -> Any:
    """The engine: our options, then ``server_engine`` (``engine.py``'s common part)."""
    from migrate_cron.store.timeouts import statement_options

    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args.setdefault("connect_timeout", bound.connect)
    if options := statement_options():
        connect_args.setdefault("options", options)
    kwargs["connect_args"] = connect_args
    engine = server_engine(url, kwargs)
    _read_only_means_disconnected(engine)
    from migrate_cron.store.deadline import watch

    watch(engine, bound.answer)
    return engine


def _read_only_means_disconnected(engine: Any) -> None:
    """A session on a server that takes no writes (SQLSTATE 25006: the old primary, now a
    replica, reached through a name or address that has not followed the failover yet) counts
    as a lost connection: SQLAlchemy then discards it and every pooled session opened before
    it (the pool's invalidation), so the next try reconnects — with
    ``target_session_attrs=read-write`` to whichever host is the primary — and the Store says
    ``DatabaseUnavailable``, which every loop waits out. ``is_disconnect`` is the dialect's
    hook for exactly this decision; the engine's own dialect instance is wrapped, so nothing
    else changes (``DriverStatement`` asks the same hook)."""
    dialect = engine.dialect
    own = dialect.is_disconnect

    def is_disconnect(error: Any, connection: Any, cursor: Any) -> bool:
        return bool(own(error, connection, cursor)) or read_only_server(error)

    dialect.is_disconnect = is_disconnect


#: SQLSTATE ``read_only_sql_transaction``: what PostgreSQL answers a write on a hot standby.
_READ_ONLY_SQLSTATE = "25006"


def read_only_server(error: BaseException) -> bool:
    """Whether ``error`` (a driver's, or SQLAlchemy's wrapping one) says the server takes no
    writes: a session on a server that is not the primary — after a failover, a host name or
    virtual IP that still leads to the old primary, now a replica ("cannot execute UPDATE in a
    read-only transaction"). Such a session is as good as a lost one: the caller reconnects
    (``target_session_attrs=read-write`` then finds the primary) and retries as in an outage."""
    orig = getattr(error, "orig", None) or error
    return getattr(orig, "sqlstate", None) == _READ_ONLY_SQLSTATE


def connector(rest: str) -> Callable[[], Any]:
    """The direct writer's connection: the URL goes to libpq as it is (``postgresql://…``):
    libpq reads the user, host, port, database, ``~/.pgpass`` and ``PG*`` variables as it does
    under SQLAlchemy; the connect timeout and statement timeout are set as ``make_engine``
    sets them (they override the URL's). A primary and its replicas (``?host=h1:p1&host=h2:p2``,
    SQLAlchemy's form, which ``config.normalize_url`` makes of libpq's) go to libpq as its own
    host list."""
    from migrate_cron.store import timeouts
    from migrate_cron.store.dialects.urls import Unsupported, check_params

    location, _, query = rest.partition("?")
    port = location.partition("/")[0].rpartition("@")[2].partition(":")[2]
    if any(c in location for c in ",[") or "+" in query or not (port.isdigit() or not port):
        raise Unsupported("postgresql URL")  # several hosts, IPv6, '+' read as space, bad port
    pairs = check_params(query, _PARAMS, repeatable=frozenset({"host"}))
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

    from migrate_cron.store.dialects.urls import Unsupported

    userinfo, at, hostport = location.partition("/")[0].rpartition("@")
    path = location.partition("/")[2]
    if hostport or not all(_HOST_TOKEN.fullmatch(h) for h in hosts):
        raise Unsupported("postgresql host list")
    if any(k == "port" for k, _ in rest):
        raise Unsupported("postgresql host list with port=")  # SQLAlchemy refuses the mix
    query = urlencode(rest, quote_via=quote)
    return f"postgresql://{userinfo}{at}{','.join(hosts)}/{path}" + (f"?{query}" if query else "")
