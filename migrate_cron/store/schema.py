"""The one definition of our tables (SQLAlchemy Core).

``job`` is the queue, ``scheduled_runs`` gives every cron slot an identity so it is enqueued
once however many hosts fire it, ``job_leases`` holds named leases (scheduler leadership,
reaper turns) that work on every backend, unlike advisory locks, and ``side_effects`` is the
ledger of ``migrate-cron once``: one row per effect key, inserted before the effect runs, so only
one caller can win it and a crash leaves an ``attempted`` row that says "check before retrying".

Per database (``dialects.DIALECTS``): the column types that differ from the portable ones
(each dialect module's ``column_types``) and the claim index's shape (``ClaimIndex``): a
partial index on ``run_at WHERE state = 'open'`` where partial indexes exist,
``(state, run_at, id)`` elsewhere. A database the table does not know gets neither — and
``make_engine`` refuses it before any DDL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    Double,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.types import TypeDecorator, TypeEngine

from migrate_cron.store.dialects import DIALECTS, ClaimIndex, aware_stamps
from migrate_cron.store.tables import Tables
from migrate_cron.vocabulary import AttemptOutcome, EffectStatus, JobState, SlotOutcome, Tally


def column_variants() -> dict[str, dict[str, Any]]:
    """Per SQLAlchemy backend name, the types its dialect module states (``column_types``):
    ``id``, ``payload``, ``timestamp``, ``string`` (length -> type), ``text`` and
    ``table_options``."""
    variants: dict[str, dict[str, Any]] = {}
    for dialect in DIALECTS.values():
        variants.update(dialect.recipe().column_types(dialect))
    return variants


def _with_variants(base: TypeEngine[Any], part: str, variants: dict[str, dict[str, Any]]) -> Any:
    typed: Any = base
    for backend, types in variants.items():
        if part in types:
            made = types[part]
            typed = typed.with_variant(made() if callable(made) else made, backend)
    return typed


# Plain SQL type that the Alembic revision renders (self-contained, no import of our package).
TIMESTAMP_TYPE = _with_variants(DateTime(timezone=True), "timestamp", column_variants())


def id_type(variants: dict[str, dict[str, Any]] | None = None) -> Any:
    """The key columns' type: BIGINT, or what a database needs instead."""
    return _with_variants(BigInteger(), "id", variants or column_variants())


def payload_type(variants: dict[str, dict[str, Any]] | None = None) -> Any:
    return _with_variants(JSON(), "payload", variants or column_variants())


def exact_string(length: int, variants: dict[str, dict[str, Any]] | None = None) -> String:
    """A VARCHAR compared byte for byte, in a character set that holds all of Unicode
    (stated where the server's default may not: ``utf8mb4`` and a binary collation on
    MySQL/MariaDB, see ``dialects/mysql.py``)."""
    string: Any = String(length)
    for backend, types in (variants or column_variants()).items():
        if "string" in types:
            string = string.with_variant(types["string"](length), backend)
    return string  # type: ignore[no-any-return]


def exact_text(variants: dict[str, dict[str, Any]] | None = None) -> Text:
    """A TEXT (64 KiB on MySQL/MariaDB), with the character set and collation of
    ``exact_string``."""
    return _with_variants(Text(), "text", variants or column_variants())  # type: ignore[no-any-return]


def table_options(variants: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Each table's default character set and collation, where a database states them."""
    options: dict[str, Any] = {}
    for types in (variants or column_variants()).values():
        options.update(types.get("table_options", {}))
    return options


def claim_backends(shape: ClaimIndex, *, rows: bool = False) -> tuple[str, ...]:
    """The SQLAlchemy names of the databases whose claim index (of the job table, or with
    ``rows`` of a business table: ``rows.py``) has ``shape``."""
    return tuple(
        backend
        for d in DIALECTS.values()
        if (d.row_claim_index if rows else d.claim_index) is shape
        for backend in d.backends
    )


def one_of(column: str, values: type[StrEnum]) -> str:
    """A CHECK constraint's text: ``column`` holds one of the enum's values, in its order.

    The released Alembic revisions were rendered from these texts, so the spelling (quotes,
    separators, order) must stay as it is for the schema check to find no difference."""
    quoted = ", ".join(f"'{v.value}'" for v in values)
    return f"{column} IN ({quoted})"


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps are UTC with microseconds everywhere; Python sees aware UTC datetimes.

    MySQL and SQLite store naive values, so aware values are converted to naive UTC on the way
    in and marked UTC on the way out. Naive input is refused rather than guessed.
    """

    impl = TIMESTAMP_TYPE
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware value")
        value = value.astimezone(UTC)
        if aware_stamps(dialect.name):
            return value
        return value.replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        stamp: datetime = (  # SQLite values written by SQL functions come back as text
            datetime.fromisoformat(value) if isinstance(value, str) else value
        )
        if stamp.tzinfo is None:
            return stamp.replace(tzinfo=UTC)
        return stamp.astimezone(UTC)


#: The schema step that added the console's tables and ``job_attempts.ready_at``.
CONSOLE_STEP = 5
#: The schema step that added the covering index status reads run times from.
RUN_TIMES_STEP = 6


def build_tables(
    prefix: str = "", *, charset_everywhere: bool = True, step: int | None = None
) -> Tables:
    """Build the metadata for a prefix (no global MetaData: several prefixes can coexist).

    ``charset_everywhere=False`` gives the tables as the released revisions 1–3 create them,
    where only the key columns stated ``utf8mb4``: their files are rendered from it and never
    change; revision 4 converts the other text columns (``generate/revision.py``). ``step``
    gives the tables as released at that step (a column added later is left out), so a
    released revision renders as it always did."""
    md = MetaData()
    p = prefix
    types = column_variants()
    ID_TYPE = id_type(types)

    def exact(length: int) -> String:
        return exact_string(length, types)

    def string(length: int) -> String:
        return exact_string(length, types) if charset_everywhere else String(length)

    def text_() -> Text:
        return exact_text(types) if charset_everywhere else Text()

    options = table_options(types) if charset_everywhere else {}
    old = step is not None and step < CONSOLE_STEP
    job = Table(
        f"{p}job",
        md,
        Column("id", ID_TYPE, primary_key=True, autoincrement=True),
        Column("kind", exact(200), nullable=False),
        Column("ref", exact(255), nullable=True),
        Column("payload", payload_type(types), nullable=True),
        Column("state", string(16), nullable=False, server_default=JobState.OPEN.value),
        Column("attempts", Integer, nullable=False, server_default="0"),
        Column("max_attempts", Integer, nullable=False, server_default="5"),
        Column("run_at", UTCDateTime(), nullable=False),
        Column("scheduled_for", UTCDateTime(), nullable=True),
        Column("locked_by", string(255), nullable=True),
        Column("locked_until", UTCDateTime(), nullable=True),
        Column("last_error", text_(), nullable=True),
        Column("output", text_(), nullable=True),
        Column("created_at", UTCDateTime(), nullable=False),
        Column("started_at", UTCDateTime(), nullable=True),
        Column("finished_at", UTCDateTime(), nullable=True),
        CheckConstraint(one_of("state", JobState), name=f"{p}job_state_check"),
        UniqueConstraint("kind", "ref", name=f"{p}job_kind_ref_key"),
        **options,
    )
    # Claim index, partial where the database has partial indexes (``ClaimIndex``).
    partial = claim_backends(ClaimIndex.PARTIAL)
    ready: dict[str, Any] = {
        f"{backend}_where": text(f"state = '{JobState.OPEN.value}'") for backend in partial
    }
    Index(f"{p}job_claim_idx", job.c.run_at, job.c.id, **ready).ddl_if(
        dialect=partial  # type: ignore[arg-type]  # tuples are documented
    )
    Index(f"{p}job_claim_idx", job.c.state, job.c.run_at, job.c.id).ddl_if(
        dialect=claim_backends(ClaimIndex.STATE_FIRST)  # type: ignore[arg-type]  # documented
    )
    # Leases to reap, stats windows and cleanup: (state, finished_at) / (state, locked_until).
    Index(f"{p}job_state_finished_idx", job.c.state, job.c.finished_at)
    Index(f"{p}job_state_locked_idx", job.c.state, job.c.locked_until)
    # (kind, state, finished_at): per-kind filters, and status's "last success / last failure
    # per kind" as one index probe each (and the loose scan that lists the kinds).
    Index(f"{p}job_kind_state_idx", job.c.kind, job.c.state, job.c.finished_at)

    scheduled_runs = Table(
        f"{p}scheduled_runs",
        md,
        Column("id", ID_TYPE, primary_key=True, autoincrement=True),
        Column("job_name", exact(200), nullable=False),
        Column("scheduled_for", UTCDateTime(), nullable=False),
        Column("enqueued_at", UTCDateTime(), nullable=False),
        Column("job_id", ID_TYPE, nullable=True),
        Column("outcome", string(16), nullable=False, server_default=SlotOutcome.ENQUEUED.value),
        CheckConstraint(one_of("outcome", SlotOutcome), name=f"{p}scheduled_runs_outcome_check"),
        UniqueConstraint("job_name", "scheduled_for", name=f"{p}scheduled_runs_slot_key"),
        **options,
    )
    leases = Table(
        f"{p}job_leases",
        md,
        Column("name", exact(200), primary_key=True),
        Column("holder", string(255), nullable=False),
        Column("expires_at", UTCDateTime(), nullable=False),
        **options,
    )
    side_effects = Table(
        f"{p}side_effects",
        md,
        Column("key", exact(255), primary_key=True),
        Column("status", string(16), nullable=False),
        Column("holder", string(255), nullable=True),
        Column("job_id", ID_TYPE, nullable=True),
        Column("attempts", Integer, nullable=False, server_default="1"),
        Column("exit_code", Integer, nullable=True),
        Column("attempted_at", UTCDateTime(), nullable=False),
        Column("finished_at", UTCDateTime(), nullable=True),
        Column("expires_at", UTCDateTime(), nullable=True),
        CheckConstraint(one_of("status", EffectStatus), name=f"{p}side_effects_status_check"),
        **options,
    )
    # One row per finished run of a job (the job row keeps only the last one's output): who ran
    # it, the run's own start and end (the worker's clock, around the process or handler, not
    # claim → write), how it ended and the tail of what it printed. ``(job_id, started_at)`` is
    # unique, so an outcome written twice (a retried batch) records its run once; ``attempt``
    # is the job's attempt counter at the time (an operator's retry starts it again at 1).
    attempts = Table(
        f"{p}job_attempts",
        md,
        Column("id", ID_TYPE, primary_key=True, autoincrement=True),
        Column("job_id", ID_TYPE, nullable=False),
        Column("kind", exact(200), nullable=False),
        Column("attempt", Integer, nullable=False),
        Column("worker", string(255), nullable=False),
        Column("started_at", UTCDateTime(), nullable=False),
        Column("finished_at", UTCDateTime(), nullable=False),
        Column("outcome", string(16), nullable=False),
        Column("exit_code", Integer, nullable=True),
        Column("error", text_(), nullable=True),
        Column("output_tail", text_(), nullable=True),
        *([] if old else [Column("ready_at", UTCDateTime(), nullable=True)]),
        CheckConstraint(one_of("outcome", AttemptOutcome), name=f"{p}job_attempts_outcome_check"),
        UniqueConstraint("job_id", "started_at", name=f"{p}job_attempts_run_key"),
        **options,
    )
    # Run-time percentiles per kind over a window (status, metrics), and retention by age.
    Index(f"{p}job_attempts_kind_idx", attempts.c.kind, attempts.c.finished_at)
    Index(f"{p}job_attempts_finished_idx", attempts.c.finished_at)
    if step is None or step >= RUN_TIMES_STEP:
        # Status's run times: a window's successful runs read inside the index (no row
        # fetched), where MySQL/MariaDB would otherwise scan the whole history.
        c = attempts.c
        Index(f"{p}job_attempts_done_idx", c.outcome, c.finished_at, c.kind, c.started_at)
    # One row per worker process, renewed by its heartbeat: a worker shows itself even idle,
    # and one that stopped renewing is seen as gone (``stopped_at`` when it said goodbye).
    workers = Table(
        f"{p}job_workers",
        md,
        Column("name", exact(255), primary_key=True),
        Column("host", string(255), nullable=False),
        Column("run_as", string(255), nullable=True),
        Column("kinds", text_(), nullable=True),
        Column("pid", Integer, nullable=True),
        Column("concurrency", Integer, nullable=False, server_default="1"),
        Column("in_flight", Integer, nullable=False, server_default="0"),
        # Its --heartbeat (seconds): how long a silence means it is gone, per worker.
        Column("heartbeat", Float, nullable=True),
        Column("started_at", UTCDateTime(), nullable=False),
        Column("last_seen", UTCDateTime(), nullable=False),
        Column("stopped_at", UTCDateTime(), nullable=True),
        **options,
    )
    Index(f"{p}job_workers_seen_idx", workers.c.last_seen)
    # The operators' actions (console and CLI): who, from where, when, what, how many rows.
    actions = Table(
        f"{p}job_actions",
        md,
        Column("id", ID_TYPE, primary_key=True, autoincrement=True),
        Column("at", UTCDateTime(), nullable=False),
        Column("who", string(255), nullable=False),
        Column("origin", string(255), nullable=False),
        Column("action", string(32), nullable=False),
        Column("kind", exact(200), nullable=True),
        Column("job_id", ID_TYPE, nullable=True),
        Column("detail", text_(), nullable=True),
        Column("changed", Integer, nullable=True),
        **options,
    )
    Index(f"{p}job_actions_job_idx", actions.c.job_id, actions.c.at)
    Index(f"{p}job_actions_kind_idx", actions.c.kind, actions.c.at)
    Index(f"{p}job_actions_at_idx", actions.c.at)
    # Counts per (kind, what, hour) of what the queue did that no row keeps (``Tally``).
    tallies = Table(
        f"{p}job_tallies",
        md,
        Column("kind", exact(200), primary_key=True),
        Column("what", exact(32), primary_key=True),
        Column("period_start", UTCDateTime(), primary_key=True),
        Column("count", Integer, nullable=False, server_default="0"),
        CheckConstraint(one_of("what", Tally), name=f"{p}job_tallies_what_check"),
        **options,
    )
    # The console's long windows: ``job_attempts`` rolled up per kind and closed period of
    # ``span`` seconds (``rollup.py``: what each column holds). Kind '' marks a rolled period.
    trend_periods = Table(
        f"{p}job_trend_periods",
        md,
        Column("kind", exact(200), primary_key=True),
        Column("span", Integer, primary_key=True),
        Column("period_start", UTCDateTime(), primary_key=True),
        Column("done", Integer, nullable=False, server_default="0"),
        Column("failed", Integer, nullable=False, server_default="0"),
        Column("done_seconds", Double, nullable=True),
        Column("done_max", Double, nullable=True),
        Column("done_hist", text_(), nullable=True),
        Column("failed_hist", text_(), nullable=True),
        Column("min_ready_at", UTCDateTime(), nullable=True),
        **options,
    )
    Index(f"{p}job_trend_periods_span_idx", trend_periods.c.span, trend_periods.c.period_start)
    return Tables(
        md,
        job,
        scheduled_runs,
        leases,
        side_effects,
        attempts,
        prefix,
        workers,
        actions,
        tallies,
        trend_periods,
    )
