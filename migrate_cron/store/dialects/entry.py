"""What the rest of the package may know about a database: one ``Dialect`` entry each.

An entry is plain data (standard library only): the cron line's ``enqueue`` reads it without
SQLAlchemy. What needs SQLAlchemy or a driver — the engine recipe, the column types, the Store
subclass — lives in the module the entry names (``module``), imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import import_module
from types import ModuleType
from typing import Any

from migrate_cron.vocabulary import JobState

#: The execution option of a read-only transaction (``StoreBase.transaction``): a recipe may
#: begin it differently (SQLite: a plain BEGIN, not BEGIN IMMEDIATE).
READONLY_OPTION = "migrate_cron_readonly"


class ClaimIndex(StrEnum):
    """The shape of the claim index on a database."""

    #: ``(run_at, id) WHERE state = 'open'``: only the ready rows, however many are done.
    PARTIAL = "partial"
    #: ``(state, run_at, id)``: where partial indexes do not exist, or (MariaDB) an index
    #: without the state first gave false "queue empty" answers under SKIP LOCKED contention.
    STATE_FIRST = "state_first"


class Stamp(StrEnum):
    """How a timestamp is bound as a driver parameter (as ``schema.UTCDateTime`` stores it)."""

    #: An aware datetime (the server keeps the zone).
    AWARE = "aware"
    #: A naive datetime in UTC.
    NAIVE = "naive"
    #: Naive UTC as text, SQLAlchemy's SQLite storage form.
    TEXT = "text"


@dataclass(frozen=True, eq=False, repr=False)  # cheap to define: cron imports it
class Statements:
    """The cron slot's write (``slot_write.py``) in one database's words. ``{p}`` stands for
    the table prefix and ``{now}`` for "now": the server's clock expression, or a parameter
    when the clock is the process's (``Dialect.server_clock`` False, or an injected clock);
    ``{running}`` and ``{open}`` for those job states, quoted (``vocabulary.JobState``: no
    statement spells a state). Values are the driver's parameters."""

    #: A live run of the kind (``skip_if_running``); a dead worker's run does not count.
    running: str
    #: The slot row; insert-if-absent (``insert_returns_id``), or a plain insert whose
    #: duplicate key is caught (``dup_key_error``).
    insert_run: str
    existing_run: str
    #: The job row on (kind, ref), as ``insert_run``; with ``notifies``, it also wakes the
    #: workers (its last parameter is the channel).
    insert_job: str
    existing_job: str
    link: str
    #: +n on the ``job_tallies`` row of (kind, what, the current hour): an upsert. ``{hour}``
    #: is the hour "now" falls in, on the server's clock or a parameter as ``{now}``.
    tally: str
    #: The driver's parameter marker, for ``{now}`` when "now" is a parameter.
    marker: str
    #: The server's "now"; None: always a parameter (the database's clock is the process's).
    server_now: str | None
    #: Insert statements answer the new id, or no row when the key existed.
    insert_returns_id: bool = True
    #: Otherwise: the error code of a duplicate key, caught inside a SAVEPOINT.
    dup_key_error: int | None = None
    notifies: bool = False
    #: The start of the server's current hour, UTC (``{hour}``), where ``server_now`` is set.
    server_hour: str | None = None

    def render(self, prefix: str, *, process_clock: bool) -> Statements:
        """The texts for ``prefix`` (validated by the caller), with "now" a parameter when
        ``process_clock`` or the database has no clock of its own."""
        now = self.marker if process_clock or self.server_now is None else self.server_now
        hour = self.marker if now == self.marker else (self.server_hour or self.marker)
        texts = {
            name: getattr(self, name)
            .replace("{p}", prefix)
            .replace("{now}", now)
            .replace("{hour}", hour)
            .replace("{running}", f"'{JobState.RUNNING.value}'")
            .replace("{open}", f"'{JobState.OPEN.value}'")
            for name in ("running", "insert_run", "existing_run", "insert_job", "existing_job",
                         "link", "tally")
        }  # fmt: skip
        return Statements(
            **texts,
            marker=self.marker,
            server_now=None if now == self.marker else self.server_now,
            server_hour=None if hour == self.marker else self.server_hour,
            insert_returns_id=self.insert_returns_id,
            dup_key_error=self.dup_key_error,
            notifies=self.notifies,
        )


@dataclass(frozen=True, eq=False, repr=False)  # cheap to define: cron imports it
class Dialect:
    """One database: its names, how to reach it, what its schema and statements look like."""

    #: The family name (``Store.family``); MySQL and MariaDB are one family.
    name: str
    #: How people name it in messages.
    title: str
    #: SQLAlchemy's names of the database (``engine.dialect.name``) this entry serves.
    backends: tuple[str, ...]
    #: The module holding its recipe: ``make_engine``, ``column_types`` (given this entry),
    #: ``connector`` and ``BEGIN`` (for the direct writer) and ``STATEMENTS``. Another entry
    #: may share it (a flavour of the same database under another name).
    module: str
    #: ``module:Class`` of its ``Store`` subclass; None: a database we only render DDL for.
    store: str | None = None
    #: A URL scheme as typed -> the scheme we connect with (the driver we install).
    drivers: Mapping[str, str] = field(default_factory=dict)
    #: The driver's logger (its warnings go into a long-running process's log, one line each:
    #: ``logline.route_library_logs``).
    driver_logger: str | None = None
    #: Schemes (after ``drivers``) the direct writer connects itself.
    direct_schemes: tuple[str, ...] = ()
    #: A URL may list several hosts as libpq does (``h1:p1,h2:p2``: a primary and replicas).
    host_list: bool = False
    claim_index: ClaimIndex = ClaimIndex.STATE_FIRST
    #: The claim and reap indexes of a business table (``rows.py``).
    row_claim_index: ClaimIndex = ClaimIndex.STATE_FIRST
    #: A file on this machine that connecting creates (reading commands must not).
    embedded_file: bool = False
    #: "now" is the server's (else this process's, bound as a parameter).
    server_clock: bool = True
    stamp: Stamp = Stamp.NAIVE
    #: Words in the first line of the driver's error (lowercased, with its class name) when a
    #: table does not exist (``faults.names_missing_table``).
    missing_table_markers: tuple[str, ...] = ()
    #: Server error codes that refuse a value (``faults.refuses_value``).
    value_errors: frozenset[int] = frozenset()
    #: The collation of text columns per backend, when it must be stated (``schema.py``),
    #: and ``generate migration`` converts existing columns to it.
    collations: Mapping[str, str] = field(default_factory=dict)

    @property
    def runs_queue(self) -> bool:
        """Whether the Store runs on it (else ``generate migration --sql`` only)."""
        return self.store is not None

    def recipe(self) -> ModuleType:
        """The module with what needs SQLAlchemy or a driver (imported on first use)."""
        return import_module(self.module)

    def store_class(self) -> Any:
        """Its ``Store`` subclass."""
        if self.store is None:
            from migrate_cron.errors import UsageError

            raise UsageError(f"migrate-cron renders DDL for {self.title} but does not run on it")
        module, _, name = self.store.partition(":")
        return getattr(import_module(module), name)
