"""PostgreSQL's finishing statements: a batch of successes (``done_statement``) or of failures
(``fail_statement``) and their attempt history in one statement, run on its own (autocommit).

Both have the same shape: ``WITH given AS (the runs, one JSON parameter), written AS (UPDATE
job … FROM given WHERE <the fence of each row's attempt> RETURNING …), ins AS (INSERT INTO
job_attempts … SELECT … FROM given JOIN written … WHERE NOT EXISTS …) SELECT … FROM written``.
The history is written for exactly the rows the UPDATE wrote (a data-modifying CTE's rows are
only seen through its RETURNING), in the same statement, so both land or neither; the NOT
EXISTS on ``(job_id, started_at)`` makes a batch written again after a lost answer record
each run once. One round trip where BEGIN, the fenced UPDATE, the history's INSERT and COMMIT
were four for a batch of successes, and three statements in a transaction per failed job."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    BindParameter,
    Boolean,
    ColumnElement,
    Float,
    Table,
    Text,
    any_,
    bindparam,
    case,
    cast,
    func,
    insert,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.sql.selectable import CTE
from sqlalchemy.types import TypeEngine

from migrate_cron.store.dialects.postgresql_statements import batch, run_columns
from migrate_cron.store.fence import FenceColumns
from migrate_cron.store.models import Failure
from migrate_cron.store.storable import storable
from migrate_cron.store.tables import Tables
from migrate_cron.vocabulary import AttemptOutcome, JobState

#: The columns a failure adds to its run in ``fail_statement``'s JSON rows (``fail_row``).
FAILURE_COLUMNS: dict[str, TypeEngine[Any]] = {
    "last_error": Text(),
    "output": Text(),
    "retry_in": Float(),
    "terminal": Boolean(),
}


def done_statement(tables: Tables, fence: FenceColumns, with_ready: bool) -> Any:
    """Successes: state ``done``. The runs (``attempt_row``): job id, attempt, started,
    finished, exit code, error, output tail[, ready]; parameters ``f_worker``, ``j_rows``,
    ``f_ids`` (the rows' job ids).
    Returns how many rows were written."""
    job = tables.job
    given = batch(**run_columns(attempt=True, ready=with_ready)).element.cte("given")
    worker: BindParameter[Any] = bindparam("f_worker", type_=Text())
    done = (
        update(job)
        .where(*_by_id(job, given, fence.attempt_of(worker, given.c.attempt)))
        .values(
            state=JobState.DONE,
            locked_by=worker,
            finished_at=func.now(),
            locked_until=None,
            last_error=None,
        )
        .returning(job.c.id, job.c.kind, job.c.attempts)
        .cte("done")
    )
    history = _history(tables, given, done, worker, AttemptOutcome.DONE, with_ready)
    return select(func.count()).select_from(done).add_cte(history)


def fail_statement(tables: Tables, fence: FenceColumns, with_ready: bool) -> Any:
    """Failures, as ``JobOps.fail`` writes each: back to ``open`` after its ``retry_in``
    seconds, or ``failed`` when its attempts are spent or it is ``terminal``; the job keeps
    the error and output. The rows: ``attempt_row``'s, then ``fail_row``'s; ``f_ids`` their ids.
    Returns the id and new state of each row written (a fenced-out job is not among them)."""
    job = tables.job
    columns = run_columns(attempt=True, ready=with_ready) | FAILURE_COLUMNS
    given = batch(**columns).element.cte("given")
    worker: BindParameter[Any] = bindparam("f_worker", type_=Text())
    spent = or_(given.c.terminal, job.c.attempts >= job.c.max_attempts)
    retry_at = func.now() + func.make_interval(0, 0, 0, 0, 0, 0, given.c.retry_in)
    failed = (
        update(job)
        .where(*_by_id(job, given, fence.attempt_of(worker, given.c.attempt)))
        .values(
            state=case((spent, JobState.FAILED), else_=JobState.OPEN),
            locked_by=worker,
            run_at=case((spent, job.c.run_at), else_=retry_at),
            finished_at=case((spent, func.now()), else_=None),
            locked_until=None,
            last_error=given.c.last_error,
            output=given.c.output,
        )
        .returning(job.c.id, job.c.kind, job.c.attempts, job.c.state)
        .cte("failed")
    )
    history = _history(tables, given, failed, worker, AttemptOutcome.FAILED, with_ready)
    return select(failed.c.id, failed.c.state).add_cte(history)


def _by_id(job: Table, given: CTE, fence: ColumnElement[bool]) -> list[ColumnElement[bool]]:
    """The rows of the batch, found by id through the primary key whatever the statistics
    say: ``id = ANY(f_ids)`` (the batch's ids, an array whose length the planner reads) and
    the fence as one opaque test (``(…) IS true``: the same rows as the bare condition).

    Bare, the fence's branches (``state = 'running'``; ``state IN ('open', 'failed')``) are
    index conditions on the ``(state, …)`` indexes; with statistics taken before a backlog
    arrived (no open row then) PostgreSQL estimated they match one row and read every open
    row through those indexes for each batch: 100 successes took 60 ms with 200,000 jobs
    waiting, against 4 ms by id (docs/benchmarks.md, "stale statistics"). Without the array,
    nothing but the join names the rows, and on tables of up to ~40,000 rows the planner
    preferred to read the whole table for each batch. The row lock's recheck
    (EvalPlanQual) evaluates the same test on the row's newest version: the fence holds."""
    ids = cast(bindparam("f_ids", type_=Text()), ARRAY(BigInteger()))  # text: see id_array
    return [job.c.id == any_(ids), job.c.id == given.c.job_id, fence.is_(true())]


def id_array(ids: Iterable[int]) -> str:
    """``f_ids`` as PostgreSQL's array text (``{1,2,3}``): adapting a list of 100 ints as an
    array cost psycopg and SQLAlchemy 0.3 ms of CPU a batch, a tenth of the statement."""
    return "{" + ",".join(str(int(i)) for i in ids) + "}"


def fail_row(failure: Failure) -> list[Any]:
    """What a failure adds to its run's row: the job's error and output, as ``fail`` stores
    them, its retry delay and whether it is terminal."""
    return [
        storable(failure.error),
        storable(failure.output),
        failure.retry_in,
        failure.terminal,
    ]


def _history(
    tables: Tables,
    given: CTE,
    written: CTE,
    worker: BindParameter[Any],
    outcome: AttemptOutcome,
    with_ready: bool,
) -> CTE:
    """``INSERT INTO job_attempts … SELECT`` the runs of the rows ``written`` returned, each
    run once (``NOT EXISTS`` on ``(job_id, started_at)``)."""
    att = tables.attempts
    present = (
        select(att.c.id)
        .where(att.c.job_id == given.c.job_id, att.c.started_at == given.c.started_at)
        .exists()
    )
    values: list[Any] = [given.c.job_id, written.c.kind, written.c.attempts, worker]
    values += [given.c.started_at, given.c.finished_at, literal(str(outcome))]
    values += [given.c.exit_code, given.c.error, given.c.output_tail]
    names = ["job_id", "kind", "attempt", "worker", "started_at", "finished_at", "outcome"]
    names += ["exit_code", "error", "output_tail"]
    if with_ready:
        values.append(given.c.ready_at)
        names.append("ready_at")
    source = select(*values).select_from(given.join(written, written.c.id == given.c.job_id))
    return insert(att).from_select(names, source.where(~present)).cte("ins")
