"""``migrate-cron enqueue NAME``: the enqueue-only producer a crontab line is rewritten to.

Every host with the crontab fires it; the slot key (job_name, scheduled_for) makes the database
keep one job per slot. The work is ``producer.enqueue.enqueue_slot``, shared with ``cli.lean``: the
plain line cron fires (``enqueue NAME --quiet --registry …``) never reaches Typer at all, and
any other form (``--json``, ``--help``, fan-out, a usage error) comes here and behaves the same.

``enqueue KIND --ref REF`` and ``enqueue KIND --stdin`` are the fan-out path (``producer.fanout``):
jobs of a queue-only kind keyed by (kind, ref). That path needs no registry entry — the kind
may be served by a Python handler, or by a registry entry added later — and has no spool: an
outage is an error (exit 75) and re-running the producer is the retry. A bad line is reported
and skipped, the others enqueued, and the exit code is 65 (EX_DATAERR): re-running cannot fix
it, so it must not look like an outage.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, RegistryPath, TablePrefix
from migrate_cron.cli.enqueue_output import say
from migrate_cron.config import DEFAULT_REGISTRY
from migrate_cron.producer.enqueue import EX_TEMPFAIL, enqueue_slot
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from migrate_cron.store import Store

SpoolDir = Annotated[
    Path | None,
    typer.Option(
        "--spool",
        envvar="MIGRATE_CRON_SPOOL",
        help="Where slots wait while the database is away. Tried first; then "
        "/var/spool/migrate-cron (when writable), ~/.local/state/migrate-cron/spool and "
        "$TMPDIR/migrate-cron-UID, so a full disk does not lose the run.",
        show_default=False,
    ),
]


HELP = (
    "Enqueue the job for one slot, once: a second call for the same slot (another host, a "
    "retry) changes nothing. The enqueue-only producer a crontab line is rewritten to.\n\n"
    "Prints `enqueued` or `already enqueued` (or nothing with --quiet); exits 0 both ways, 2 if "
    "the job is unknown. When the database cannot be reached (refused, timed out, stalled: "
    "25 s at most), the slot is written to the local spool, one line says so, and the exit "
    "code is 75 (EX_TEMPFAIL) so cron's mail tells you; the next enqueue that reaches the "
    "database replays the spool first (`spool list`, `spool flush` by hand). Only the job's "
    "own registry entry is read; if it cannot be (a syntax error, the entry is bad), the run "
    "is spooled until the entry loads again, also with exit 75. If no spool place takes a "
    "slot, the line names each place and why.\n\n"
    "Fan-out (queue-only kinds, no registry entry needed): `--ref REF` enqueues one job of "
    'KIND keyed by REF, `--stdin` one per JSON line {"ref": ..., "payload": ..., '
    '"run_at": ...} (1,000 per statement). A (KIND, REF) already enqueued is skipped, so '
    "feeding the same input twice adds nothing. A bad line (not UTF-8, not such an object, a "
    "NUL or lone surrogate in its text, over 1 MiB, or refused by the database) is reported "
    "as `<stdin>:LINE: reason` and skipped; every other line is enqueued, and the exit code "
    "is then 65 (EX_DATAERR: fix those lines, feeding them again is not a retry). A database "
    "outage exits 75 (no spool on this path: feed the whole input again).\n\n"
    "Examples:\n\n"
    "  migrate-cron enqueue invoices-export\n\n"
    "  migrate-cron enqueue invoices-export --slot 2026-03-01T02:30 --json\n\n"
    "  migrate-cron enqueue send-invoice --ref 8812 --payload '{\"order\": 8812}'\n\n"
    "  psql -Atc \"select json_build_object('ref', id) from orders where state = 'pending'\" "
    "| migrate-cron enqueue export-order --stdin"
)


def register(app: typer.Typer) -> None:
    app.command("enqueue", help=HELP)(enqueue)


def enqueue(
    name: Annotated[
        str,
        typer.Argument(
            help="The job's name in the registry; with --ref/--stdin, a queue-only kind."
        ),
    ],
    slot: Annotated[
        str,
        typer.Option(
            "--slot",
            help=(
                "The cron slot this run is for: `auto` = the job's latest slot at or before now "
                "(in its timezone; a job without schedule: the current minute), or an ISO time "
                "(without offset: read in the job's timezone)."
            ),
        ),
    ] = "auto",
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print nothing on success (cron mails any output)."),
    ] = False,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
    registry: RegistryPath = DEFAULT_REGISTRY,
    spool_dir: SpoolDir = None,
    ref: Annotated[
        str | None,
        typer.Option(
            "--ref",
            help="Fan-out: enqueue one job of the queue-only kind NAME keyed by REF (no-op if "
            "(NAME, REF) exists).",
            show_default=False,
        ),
    ] = None,
    payload: Annotated[
        str | None,
        typer.Option("--payload", metavar="JSON", help="With --ref: the job's payload (JSON)."),
    ] = None,
    run_at: Annotated[
        str | None,
        typer.Option(
            "--run-at",
            metavar="ISO",
            help="With --ref: not before this time (ISO 8601; no offset means UTC).",
        ),
    ] = None,
    from_stdin: Annotated[
        bool,
        typer.Option(
            "--stdin",
            help='Fan-out: one job of NAME per JSON line {"ref": ..., "payload": ...} on stdin.',
        ),
    ] = False,
) -> None:
    """See ``HELP``."""
    if ref is not None or from_stdin or payload is not None or run_at is not None:
        _fan_out(name, slot, ref, payload, run_at, from_stdin, quiet, as_json,
                 database_url, table_prefix, registry)  # fmt: skip
        return
    result = enqueue_slot(
        name,
        slot=slot,
        quiet=quiet,
        as_json=as_json,
        database_url=database_url,
        table_prefix=table_prefix,
        registry=registry,
        spool_dir=spool_dir,
    )
    code = say(result)
    if code:
        raise typer.Exit(code)


def _fan_out(
    kind: str,
    slot: str,
    ref: str | None,
    payload: str | None,
    run_at: str | None,
    from_stdin: bool,
    quiet: bool,
    as_json: bool,
    database_url: str,
    table_prefix: str,
    registry: str,
) -> None:
    """The queue-only path: --ref (one job) or --stdin (one per line)."""
    from migrate_cron.cli.common import open_store, print_json
    from migrate_cron.errors import DatabaseUnavailable, DataRefused, UsageError
    from migrate_cron.producer.fanout import (
        check_kind,
        check_payload,
        check_ref,
        load_json,
        parse_time,
    )

    if slot != "auto":
        raise UsageError("--slot is for registry jobs; --ref/--stdin enqueue queue-only kinds")
    if from_stdin and (ref is not None or payload is not None or run_at is not None):
        raise UsageError('--stdin reads ref, payload and run_at from each line: {"ref": ...}')
    if not from_stdin and ref is None:
        raise UsageError("--payload and --run-at go with --ref REF (or use --stdin)")
    check_kind(kind)
    try:
        data = load_json(payload) if payload is not None else None
        check_payload(data)
    except ValueError as exc:
        raise UsageError(f"--payload: {exc}") from None
    when = parse_time(run_at) if run_at is not None else None
    if ref is not None:
        try:
            check_ref(ref)
        except ValueError as exc:
            raise UsageError(f"--ref: {exc}") from None
    max_attempts = _max_attempts(registry, kind)
    store = open_store(database_url, table_prefix)
    try:
        if from_stdin:
            _fan_out_stdin(store, kind, max_attempts, quiet, as_json)
            return
        assert ref is not None
        one = store.enqueue(kind, data, ref=ref, run_at=when, max_attempts=max_attempts)
    except DatabaseUnavailable as exc:
        sys.stderr.write(f"migrate-cron enqueue: {exc}\n")
        raise typer.Exit(EX_TEMPFAIL) from None
    except DataRefused as exc:
        raise DataRefused(f"the database refused the job ({exc})") from None
    finally:
        store.dispose()
    if as_json:
        print_json({"kind": kind, "ref": ref, "created": one.created, "job_id": one.job_id})
    elif not quiet:
        typer.echo("enqueued" if one.created else "already enqueued")


#: Bad lines named one by one on stderr (cron mails it); past these, only their count.
REPORTED_LINES = 100


def _fan_out_stdin(store: Store, kind: str, max_attempts: int, quiet: bool, as_json: bool) -> None:
    """``--stdin``: every good line enqueued, each bad one named (``<stdin>:LINE: reason``)
    and skipped; exit 65 (EX_DATAERR) when there was one."""
    from migrate_cron.cli.common import print_json
    from migrate_cron.errors import EX_DATAERR
    from migrate_cron.producer.fanout import Rejected, fan_out, read_lines

    shown: list[dict[str, object]] = []

    def report(bad: Rejected) -> None:
        if len(shown) < REPORTED_LINES:
            shown.append({"line": bad.line, "reason": bad.reason})
            sys.stderr.write(f"<stdin>:{bad.line}: {bad.reason}\n")
            sys.stderr.flush()

    stdin = sys.stdin.buffer if sys.stdin is not None else io.BytesIO()  # fd 0 closed: no lines
    result = fan_out(store, kind, read_lines(stdin), max_attempts=max_attempts, report=report)
    if as_json:
        counts = {"lines": result.lines, "created": result.created, "existing": result.existing}
        print_json({"kind": kind, **counts, "skipped": result.skipped, "bad_lines": shown})
    elif not quiet or result.skipped:
        skipped = f", {result.skipped} bad line(s) skipped" if result.skipped else ""
        sys.stderr.write(
            f"{kind}: {result.lines} line(s), {result.created} new job(s), "
            f"{result.existing} already enqueued{skipped}\n"
        )
    if result.skipped > REPORTED_LINES:
        sys.stderr.write(f"(the first {REPORTED_LINES} bad lines are named above)\n")
    if result.skipped:
        raise typer.Exit(EX_DATAERR)


def _max_attempts(registry: str, kind: str) -> int:
    """The registry entry's max_attempts when the kind has one; the default otherwise (a
    queue-only kind needs no entry, and another entry's error is not its own)."""
    from migrate_cron.registry import find_entry
    from migrate_cron.store.base import DEFAULT_MAX_ATTEMPTS

    if not os.path.exists(registry):
        return DEFAULT_MAX_ATTEMPTS
    spec = find_entry(registry, kind)
    return spec.max_attempts if spec is not None else DEFAULT_MAX_ATTEMPTS
