"""Opening the store for something a person waits on: a command, a page of the web UI.

Both read the same settings (the table prefix checked), wait the short time limits
(``Use.QUICK`` unless told otherwise) and never create a database file by reading it:
only ``db upgrade`` creates one, so a ``status`` run (or a web UI started) in the wrong directory
leaves no stray empty database behind; the first use says "no database yet".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from migrate_cron.store import Store
    from migrate_cron.store.timeouts import Use


def open_for_person(database_url: str, table_prefix: str = "", use: Use | None = None) -> Store:
    """The store, unconnected: errors surface as ``DatabaseUnavailable`` (``SchemaMissing``
    for a missing database file) on first use."""
    from migrate_cron.config import Settings, validate_prefix
    from migrate_cron.store import open_store
    from migrate_cron.store.timeouts import Use

    s = Settings(database_url=database_url, table_prefix=validate_prefix(table_prefix))
    return open_store(
        s.database_url, prefix=s.table_prefix, use=use or Use.QUICK, file_must_exist=True
    )
