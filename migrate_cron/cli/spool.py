"""``migrate-cron spool list|flush``: the slots ``enqueue`` kept on this host while the
database was away (see ``migrate_cron/spool.py``)."""

from __future__ import annotations

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, TablePrefix, info, print_json
from migrate_cron.cli.enqueue import SpoolDir
from migrate_cron.config import DEFAULT_DATABASE_URL

spool_app = typer.Typer(
    help=(
        "Slots `enqueue` spooled on this host while the database was away. A host-level probe "
        "reads `spool list --json` (status cannot see what never reached the database)."
    ),
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(spool_app, name="spool")


@spool_app.command("list")
def spool_list(spool_dir: SpoolDir = None, as_json: JsonFlag = False) -> None:
    """Every spooled slot, oldest first, with the database it is for.

    Example: migrate-cron spool list --json
    """
    from migrate_cron.spool import Spool, default_dir

    spool = Spool(spool_dir or default_dir())
    entries = spool.entries()
    if as_json:
        print_json(
            {
                "spool": str(spool.directory),
                "count": len(entries),
                "slots": [e.as_json() for e in entries],
            }
        )
        return
    if not entries:
        info(f"{spool.directory}: no spooled slot")
        return
    for e in entries:
        typer.echo(f"{e.slot:%Y-%m-%dT%H:%M:%SZ}  {e.job}  {e.target}  ({e.reason})")


@spool_app.command("flush")
def spool_flush(
    spool_dir: SpoolDir = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
    as_json: JsonFlag = False,
) -> None:
    """Enqueue this database's spooled slots now (what the next `enqueue` does first).

    A slot already in the database is a no-op, so flushing twice changes nothing. Exit 75
    when the database is still unavailable (the rest stay spooled).

    Example: migrate-cron spool flush --database-url postgresql://app@db/app
    """
    from migrate_cron.cli.common import open_store, settings
    from migrate_cron.errors import DatabaseUnavailable
    from migrate_cron.spool import Spool, default_dir, target_of

    config = settings(database_url, table_prefix)
    spool = Spool(spool_dir or default_dir())
    target = target_of(config.safe_url, config.table_prefix)
    store = open_store(database_url, table_prefix)
    flushed = []
    try:
        for entry in spool.flush(
            target,
            lambda e: store.enqueue_run(e.job, e.slot, max_attempts=e.max_attempts),
        ):
            flushed.append(entry)
    except DatabaseUnavailable as exc:
        info(f"[red]{exc}[/red]; {len(spool.entries(target))} slot(s) stay spooled")
        raise typer.Exit(75) from None
    finally:
        store.dispose()
    if as_json:
        print_json({"flushed": [e.as_json() for e in flushed]})
    else:
        info(f"enqueued {len(flushed)} spooled slot(s) from {spool.directory}")
