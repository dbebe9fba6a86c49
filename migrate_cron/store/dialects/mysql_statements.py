"""MySQL 8 / MariaDB 10.6+: the worker's statements as fixed texts, built once per store.

Built with SQLAlchemy Core on every call (the claim's SELECT and UPDATE, the fenced finish,
the history's three statements), then read back through the column types, they cost the
worker more client CPU per job than anything else it does on these servers. Here each text
depends only on the tables (and on whether kinds are named or excluded): it runs through
``exec_driver_sql`` with PyMySQL's own parameters (a sequence renders as ``(a, b, …)``), and
the rows are read by position.

A batch of runs travels as one JSON parameter read by ``JSON_TABLE`` (MySQL 8.0.4+, MariaDB
10.6+): PyMySQL escapes one string instead of eleven values per run, and the history is one
``INSERT … SELECT`` instead of two reads and an insert. Both servers accept the same text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from migrate_cron.store.attempts import run_values
from migrate_cron.store.models import AttemptRun, Job
from migrate_cron.vocabulary import AFTER_FAILURE_STATES, AttemptOutcome, JobState

#: What the claim reads of a job, in ``Job``'s order less the payload and the columns the
#: claim itself sets (state, locked_by, locked_until, started_at, finished_at), then the
#: server's clock; as one ``JSON_ARRAY`` per row, the payload beside it. PyMySQL decodes
#: every column of every row in Python (a length-coded read each, a regex and six ``int``
#: calls per DATETIME); one JSON text per row is parsed by ``json.loads`` in C. The times
#: travel as text (``CAST … AS CHAR``, six fraction digits), the same on MySQL 8 and MariaDB.
CLAIM_ARRAY = (
    "id",
    "kind",
    "ref",
    "attempts",
    "max_attempts",
    "CAST(run_at AS CHAR)",
    "CAST(scheduled_for AS CHAR)",
    "last_error",
    "output",
    "CAST(created_at AS CHAR)",
)
#: "Now" in the claim: the server's clock, or (``CLOCK_NOW``) an injected clock's reading as
#: the parameter ``c_clock`` — the same text either way, so tests run the claim users run.
SERVER_NOW = "UTC_TIMESTAMP(6)"
CLOCK_NOW = "CAST(%(c_clock)s AS DATETIME(6))"


def _claimed_columns(alias: str, now: str) -> str:
    """``JSON_ARRAY(…), payload`` of the table named ``alias`` in the statement."""
    values = [
        f"CAST({alias}.{c[5:]}" if c.startswith("CAST(") else f"{alias}.{c}" for c in CLAIM_ARRAY
    ]
    return f"JSON_ARRAY({', '.join(values)}, CAST({now} AS CHAR)), {alias}.payload"


def _ready(kinds: bool, exclude: bool, now: str) -> str:
    ready = [f"state = '{JobState.OPEN.value}'", f"run_at <= {now}"]
    if kinds:
        ready.append("kind IN %(c_kinds)s")
    if exclude:
        ready.append("kind NOT IN %(c_exclude)s")
    return " AND ".join(ready)


def claim_window_sql(
    job: str, *, kinds: bool, exclude: bool, got: bool = False, now: str = SERVER_NOW
) -> str:
    """The claim: the first ``c_window`` ready ids by a plain (non-locking) read, in a derived
    table, then up to ``c_n`` of those rows locked by their key with SKIP LOCKED, their state
    and time checked again under the lock. Parameters ``c_n``, ``c_window`` and, when asked
    for, ``c_kinds`` / ``c_exclude`` (sequences) and ``c_got`` (``got``: the ids this
    transaction took already, which SKIP LOCKED would return again), ``c_clock`` with
    ``now=CLOCK_NOW``. ``job``: the quoted table name; each row ends with ``now`` as text.

    Why not a locking scan of the claim index: a claim moves its rows out of ``state =
    'open'``, which leaves delete-marked entries at the head of that index range until
    InnoDB's purge removes them, and under a steady stream of claims purge lags by thousands
    of rows. A locking read looks each of them up in the table (``ANALYZE``: 20,000 pages read
    for 100 rows after 100 quick claims, 200 on a fresh table); a plain read skips them
    inside the index. The server's CPU per claimed row: 37 → 7 µs. And rows are only ever
    locked by their key: a locking scan also locks the claim index's entries of rows it
    skips, the very entries another claimer's UPDATE must change — with both kinds of claim
    in one server, two claimers deadlocked on each other's entries (the four-process test
    in ``tests/store/test_concurrency.py``). A derived table with LIMIT is never merged into
    the outer query, and a locking read does not lock the rows a subquery reads (MySQL 8
    and MariaDB alike). The outer query has no ORDER BY, so it reads the window in its order
    and stops, locked, at ``c_n`` rows (a sort would read, and lock, the whole window
    first). Rows another claim holds are skipped; a claim that comes back short looks again
    once, past the rows it took, over a wider window (``_claim``)."""
    mine = " AND id NOT IN %(c_got)s" if got else ""
    return (
        f"SELECT {_claimed_columns('j', now)} FROM (SELECT id FROM {job} "
        f"WHERE {_ready(kinds, exclude, now)}{mine} ORDER BY run_at, id LIMIT %(c_window)s) "
        f"AS c STRAIGHT_JOIN {job} AS j ON j.id = c.id WHERE j.state = "
        f"'{JobState.OPEN.value}' AND j.run_at <= {now} LIMIT %(c_n)s FOR UPDATE SKIP LOCKED"
    )


def enqueue_sql(job: str) -> str:
    """One ready job without a ref (``Store.enqueue``): parameters ``e_kind``, ``e_payload``
    (JSON text), ``e_max_attempts``, ``e_run_at`` (naive UTC, or None: ``e_delay``
    microseconds after the server's now), ``e_scheduled_for``. The values the portable
    ``_insert_job`` writes, in one text the server parses from the statement cache's view
    alone; the new id is the driver's last insert id."""
    return (
        f"INSERT INTO {job} (kind, payload, state, attempts, max_attempts, run_at, "
        "scheduled_for, created_at) VALUES (%(e_kind)s, %(e_payload)s, "
        f"'{JobState.OPEN.value}', 0, %(e_max_attempts)s, COALESCE(%(e_run_at)s, "
        "TIMESTAMPADD(MICROSECOND, %(e_delay)s, UTC_TIMESTAMP(6))), %(e_scheduled_for)s, "
        "UTC_TIMESTAMP(6))"
    )


def claim_update_sql(job: str) -> str:
    """The picked rows taken: parameters ``c_ids``, ``c_worker``, ``c_until``, ``c_now``
    (the SELECT's clock, so the rows and the ``Job`` values agree to the microsecond)."""
    return (
        f"UPDATE {job} SET state = '{JobState.RUNNING.value}', attempts = attempts + 1, "
        "locked_by = %(c_worker)s, locked_until = %(c_until)s, started_at = %(c_now)s, "
        "finished_at = NULL WHERE id IN %(c_ids)s"
    )


def stamp(text: str) -> datetime:
    """A DATETIME(6) read as text (naive UTC) as an aware datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def stamp_or_none(text: str | None) -> datetime | None:
    return None if text is None else stamp(text)


def claimed(rows: Iterable[Sequence[Any]]) -> list[tuple[list[Any], Any]]:
    """The claim's rows as (the ``CLAIM_ARRAY`` values, the payload text)."""
    loads = json.loads
    return [(loads(r[0]), r[1]) for r in rows]


def jobs_from_claim(
    rows: Iterable[tuple[list[Any], Any]], worker_id: str, now: datetime, until: datetime
) -> list[Job]:
    """``Job`` values from ``claimed`` rows, with the claim's own values (as the row now
    holds them). The payload is decoded as the JSON column type would (no payload: NULL or
    JSON ``null``)."""
    running = JobState.RUNNING
    loads = json.loads
    return [
        Job(v[0], v[1], v[2], None if p is None or p == "null" else loads(p), running, v[3] + 1,
            v[4], stamp(v[5]), stamp_or_none(v[6]), worker_id, until, v[7], v[8], stamp(v[9]),
            now, None)
        for v, p in rows
    ]  # fmt: skip


def fence_sql(worker: str, attempt: str) -> str:
    """``fence.FenceColumns.attempt_of`` for the job table, as text: ``worker`` may still
    record attempt ``attempt`` (both SQL expressions)."""
    taken_back = ", ".join(f"'{s.value}'" for s in AFTER_FAILURE_STATES)
    return (
        f"attempts = {attempt} AND ((locked_by = {worker} AND state = "
        f"'{JobState.RUNNING.value}') OR (locked_by IS NULL AND locked_until IS NULL "
        f"AND state IN ({taken_back})))"
    )


def done_update_sql(job: str) -> str:
    """``complete``'s fenced UPDATE for the jobs of one attempt number: parameters
    ``f_ids`` (a sequence), ``f_worker``, ``f_attempt``."""
    return (
        f"UPDATE {job} SET state = '{JobState.DONE.value}', locked_by = %(f_worker)s, "
        "finished_at = UTC_TIMESTAMP(6), locked_until = NULL, last_error = NULL "
        f"WHERE id IN %(f_ids)s AND {fence_sql('%(f_worker)s', '%(f_attempt)s')}"
    )


#: A text column of ``runs_table``. Its character set is stated: left out, it is the
#: database's default, and on a ``latin1`` database every character beyond Latin-1 became
#: ``?`` inside ``JSON_TABLE``, silently (``tests/faults/test_latin1_database.py``).
RUN_TEXT = "LONGTEXT CHARACTER SET utf8mb4"


def runs_table(with_ready: bool, with_attempt: bool) -> str:
    """``JSON_TABLE`` over the ``j_rows`` parameter (``runs_json``), one row per run: job_id,
    [attempt,] started_at, finished_at, exit_code, error, output_tail[, ready_at]. Text
    columns are LONGTEXT in utf8mb4 (``RUN_TEXT``), so a value too long for its column, or
    one its column's character set cannot hold, fails the INSERT (strict mode) as a plain
    insert would, rather than being cut or replaced here."""
    names = ["job_id BIGINT"]
    if with_attempt:
        names.append("attempt INT")
    names += ["started_at DATETIME(6)", "finished_at DATETIME(6)", "exit_code INT"]
    names += [f"error {RUN_TEXT}", f"output_tail {RUN_TEXT}"]
    if with_ready:
        names.append("ready_at DATETIME(6)")
    columns = ", ".join(f"{name} PATH '$[{i}]'" for i, name in enumerate(names))
    return f"JSON_TABLE(%(j_rows)s, '$[*]' COLUMNS ({columns})) AS g"


def attempts_insert_sql(job: str, attempts: str, with_ready: bool, by_attempt: bool) -> str:
    """The history of a finished batch in one statement, as PostgreSQL's
    ``attempts_statement``: the runs joined to their job rows, for the jobs this transaction
    finished (``locked_by`` = ``a_worker``, ``state`` in ``a_states``, a sequence) and whose
    run has no row yet (``(job_id, started_at)`` is unique). ``by_attempt``: each run carries
    its attempt, and only a job still at that attempt gets its row (a stale run in the batch,
    fenced out, records nothing, as in PostgreSQL's ``done_statement``). ``STRAIGHT_JOIN``:
    the runs first, each job by its key. Left to choose, MariaDB reads the job table through
    ``(state, locked_until)`` — every done job, on a live queue millions — and joins the runs
    to that. Parameters ``j_rows``, ``a_worker``, ``a_outcome``, ``a_states``."""
    names = "job_id, kind, attempt, worker, started_at, finished_at, outcome, exit_code, error, "
    names += "output_tail" + (", ready_at" if with_ready else "")
    values = "g.job_id, j.kind, j.attempts, %(a_worker)s, g.started_at, g.finished_at, "
    values += "%(a_outcome)s, g.exit_code, g.error, g.output_tail"
    values += ", g.ready_at" if with_ready else ""
    same = "j.attempts = g.attempt AND " if by_attempt else ""
    return (
        f"INSERT INTO {attempts} ({names}) SELECT {values} "
        f"FROM {runs_table(with_ready, by_attempt)} STRAIGHT_JOIN {job} AS j ON j.id = g.job_id "
        f"WHERE {same}j.locked_by = %(a_worker)s AND j.state IN %(a_states)s AND NOT EXISTS "
        f"(SELECT 1 FROM {attempts} AS a WHERE a.job_id = g.job_id "
        "AND a.started_at = g.started_at)"
    )


def _naive(value: datetime | None) -> str | None:
    """A time as DATETIME(6) text, naive UTC (its first 26 characters: the offset cut)."""
    if value is None:
        return None
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:26]


def runs_json(
    runs: Mapping[int, AttemptRun], with_ready: bool, attempts: Mapping[int, int] | None = None
) -> str:
    """``runs_table``'s parameter: the runs as a JSON array of arrays, in its columns' order
    (one string for PyMySQL to escape, serialised by ``json.dumps`` in C). ``attempts``: per
    job, the attempt of its run (``by_attempt``)."""
    rows = []
    for job_id, run in runs.items():
        row: list[Any] = [int(job_id)]
        if attempts is not None:
            row.append(attempts[job_id])
        rows.append(row + run_values(run, with_ready, _naive))
    return json.dumps(rows)


def attempts_params(
    rows: str, worker_id: str, outcome: str, states: Sequence[str]
) -> dict[str, Any]:
    """``attempts_insert_sql``'s parameters, the runs as ``runs_json`` made them."""
    return {
        "j_rows": rows,
        "a_worker": worker_id,
        "a_outcome": str(outcome),
        "a_states": [str(s) for s in states],
    }


#: ``complete``'s outcome in the history.
DONE_OUTCOME = str(AttemptOutcome.DONE)
