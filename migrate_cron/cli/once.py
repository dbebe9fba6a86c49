"""``migrate-cron once KEY -- COMMAND…``: run a side effect at most once per key.

The logic (ledger rows, running the command, passing signals on) is ``migrate_cron.ledger``;
this module parses and prints.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, TablePrefix
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

HELP = (
    "Run COMMAND unless KEY is recorded as done: the side-effect ledger for legacy scripts. "
    "`attempted` is recorded before the command starts (only one caller can win a key), then "
    "`done` (exit 0) or `failed` (any other exit; the next call runs it again). The command "
    "inherits stdin/stdout/stderr and this exits with its exit code.\n\n"
    "A done key exits 0 without running (one line on stderr unless --quiet). A key still "
    "`attempted` — another call is running it, or one crashed and the effect may have "
    "happened — exits 3 without running and says which; check the effect, then `--forget KEY` "
    "or run with --retry-attempted. Concurrent callers never wait: the second exits 3.\n\n"
    "Inside a worker job, MIGRATE_CRON_JOB_ID, MIGRATE_CRON_SCHEDULED_FOR (the cron slot) and "
    "MIGRATE_CRON_PAYLOAD are set, so a script can build keys from them.\n\n"
    "Examples:\n\n"
    "  migrate-cron once invoice:8812:send -- /usr/local/bin/send-invoice 8812\n\n"
    '  migrate-cron once "report:$MIGRATE_CRON_SCHEDULED_FOR" -- ./mail-report.sh\n\n'
    "  migrate-cron once sync:partner --ttl 1d -- ./sync.sh   # at most once a day\n\n"
    "  migrate-cron once --forget invoice:8812:send"
)
#: Exit code when the key is in doubt (attempted, no outcome): distinct from the command's.
EX_IN_DOUBT = 3
EX_TEMPFAIL = 75


def register(app: typer.Typer) -> None:
    app.command("once", help=HELP)(once)


def once(
    key: Annotated[str, typer.Argument(help="The effect's key, e.g. invoice:8812:send.")],
    command: Annotated[
        list[str] | None,
        typer.Argument(help="The command and its arguments, after `--`.", show_default=False),
    ] = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            metavar="DURATION",
            help="A done key counts for this long (90s, 12h, 1d, 2w), then runs again.",
            show_default=False,
        ),
    ] = None,
    forget: Annotated[
        bool,
        typer.Option("--forget", help="Delete KEY from the ledger (after checking the effect)."),
    ] = False,
    retry_attempted: Annotated[
        bool,
        typer.Option(
            "--retry-attempted",
            help="Run even if KEY is still `attempted` (you checked: the effect did not happen).",
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No line when the key is done already.")
    ] = False,
    as_json: JsonFlag = False,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
) -> None:
    """See ``HELP``."""
    from migrate_cron.cli.common import open_store
    from migrate_cron.errors import DatabaseUnavailable, EffectInDoubt, UsageError
    from migrate_cron.ledger import check_key, run_once

    check_key(key)
    argv = list(command or [])
    if forget:
        if argv or ttl or retry_attempted:
            raise UsageError("--forget KEY takes no command, --ttl or --retry-attempted")
        _forget(database_url, table_prefix, key, as_json, quiet)
        return
    if not argv:
        raise UsageError("no command: migrate-cron once KEY -- COMMAND [ARG...]")
    seconds = _ttl(ttl)
    store = open_store(database_url, table_prefix)
    try:
        result = run_once(store, key, argv, ttl=seconds, retry_attempted=retry_attempted)
    except EffectInDoubt as exc:
        if as_json:  # the refusal as data too; the error line still goes to stderr
            from migrate_cron.cli.common import print_json

            print_json({"key": key, "ran": False, "in_doubt": True, "holder": exc.holder,
                        "attempted_at": exc.attempted_at})  # fmt: skip
        raise
    except DatabaseUnavailable as exc:
        sys.stderr.write(f"migrate-cron once: {exc}; {key!r} not run\n")
        raise typer.Exit(EX_TEMPFAIL) from None
    finally:
        store.dispose()
    if result.error:
        sys.stderr.write(f"migrate-cron once: {result.error}\n")
    if not result.recorded:
        sys.stderr.write(
            f"migrate-cron once: the command exited {result.exit_code} but its outcome could not "
            f"be recorded; {key!r} stays attempted (check it, then --forget)\n"
        )
    if as_json:
        from migrate_cron.cli.common import print_json

        print_json(
            {
                "key": key,
                "ran": result.ran,
                "in_doubt": False,
                "exit_code": result.exit_code,
                "recorded": result.recorded,
                "effect": result.effect if not result.ran else None,
            }
        )
    elif not result.ran and not quiet:
        done = result.effect.finished_at
        when = f" at {done:%Y-%m-%d %H:%M:%S} UTC" if done else ""
        sys.stderr.write(f"{key}: done already{when}, not run again\n")
    raise typer.Exit(result.exit_code)


def _forget(database_url: str, table_prefix: str, key: str, as_json: bool, quiet: bool) -> None:
    from migrate_cron.cli.common import open_store, print_json

    store = open_store(database_url, table_prefix)
    try:
        was = store.effect_forget(key)
    finally:
        store.dispose()
    if as_json:
        print_json({"key": key, "forgotten": was is not None, "was": was})
    elif not quiet:
        state = f"was {was.status}" if was is not None else "was not in the ledger"
        sys.stderr.write(f"{key}: forgotten ({state})\n")


def _ttl(text: str | None) -> float | None:
    if text is None:
        return None
    from migrate_cron.errors import UsageError
    from migrate_cron.ops.durations import parse_duration

    seconds = parse_duration(text, option="--ttl")
    if seconds <= 0:
        raise UsageError("--ttl must be longer than 0")
    return seconds
