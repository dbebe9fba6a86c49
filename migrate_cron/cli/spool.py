"""``migrate-cron spool list|flush``: the slots ``enqueue`` kept on this host while the
database was away (see ``migrate_cron/producer/spool.py``)."""

from __future__ import annotations

import typer

from migrate_cron.cli.common import DatabaseUrl, JsonFlag, TablePrefix, info, print_json
from migrate_cron.cli.enqueue import SpoolDir
from migrate_cron.store.dialects import DEFAULT_DATABASE_URL

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
    """Every spooled slot, oldest first, with the database it is for: from every place
    `enqueue` may have spooled to (--spool, /var/spool/migrate-cron, the user's state
    directory, $TMPDIR). An unresolved slot (its registry entry did not load) shows when
    cron fired it.

    Example: migrate-cron spool list --json
    """
    from migrate_cron.producer.spool import Spool

    spool = Spool.on_host(spool_dir)
    entries = spool.entries()
    if as_json:
        print_json(
            {
                "spool": str(spool.directory),
                "places": [str(p) for p in spool.places],
                "count": len(entries),
                "slots": [e.as_json() for e in entries],
            }
        )
        return
    if not entries:
        info(f"no spooled slot ({', '.join(str(p) for p in spool.places)})")
        return
    for e in entries:
        fired = "" if e.resolved else "fired "
        typer.echo(f"{fired}{e.slot:%Y-%m-%dT%H:%M:%SZ}  {e.job}  {e.target}  ({e.reason})")


@spool_app.command("flush")
def spool_flush(
    spool_dir: SpoolDir = None,
    database_url: DatabaseUrl = DEFAULT_DATABASE_URL,
    table_prefix: TablePrefix = "",
    as_json: JsonFlag = False,
) -> None:
    """Enqueue this database's spooled slots now (what the next `enqueue` does first).

    An unresolved slot (spooled because its registry entry did not load) is enqueued once
    the entry loads again; until then it stays. A slot already in the database is a no-op,
    so flushing twice changes nothing. Exit 75 when the database is still unavailable (the
    rest stay spooled).

    Example: migrate-cron spool flush --database-url postgresql://app@db/app
    """
    from migrate_cron.cli.common import open_store, settings
    from migrate_cron.errors import DatabaseUnavailable
    from migrate_cron.producer.enqueue import replayer
    from migrate_cron.producer.spool import Spool, target_of

    config = settings(database_url, table_prefix)
    spool = Spool.on_host(spool_dir)
    target = target_of(config.safe_url, config.table_prefix)
    store = open_store(database_url, table_prefix)
    flushed = []
    try:
        for entry in spool.flush(target, replayer(store)):
            flushed.append(entry)
    except DatabaseUnavailable as exc:
        info(f"[red]{exc}[/red]; {len(spool.entries(target))} slot(s) stay spooled")
        raise typer.Exit(75) from None
    finally:
        store.dispose()
    waiting = [e for e in spool.entries(target) if not e.resolved]
    if as_json:
        print_json(
            {"flushed": [e.as_json() for e in flushed], "waiting": [e.as_json() for e in waiting]}
        )
        return
    info(f"enqueued {len(flushed)} spooled slot(s)")
    if waiting:
        info(
            f"{len(waiting)} slot(s) wait for their registry entry to load again "
            f"(first: {waiting[0].job}: {waiting[0].reason})"
        )
