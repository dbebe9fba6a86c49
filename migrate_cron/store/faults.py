"""What a driver's error says about the database: its tables are missing, it is away, or it is
no longer the primary.

One reading for both writers — the Store (``StoreBase.translate``, errors wrapped by
SQLAlchemy) and ``direct.py`` (the driver's own errors) — so ``enqueue`` prints the same line
and exits with the same code whichever wrote the slot. Standard library only.
"""

from __future__ import annotations

from migrate_cron.store.dialects import DIALECTS
from migrate_cron.store.dialects.postgresql import read_only_server

__all__ = [
    "dbapi_class",
    "first_line",
    "names_missing_table",
    "read_only_server",
    "refuses_value",
]


def first_line(error: BaseException) -> str:
    """The error's first line, or its class name when it has no text."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def names_missing_table(error: BaseException) -> bool:
    """Whether the driver's ``error`` says one of our tables does not exist."""
    lowered = f"{type(error).__name__} {first_line(error)}".lower()
    markers = (m for d in DIALECTS.values() for m in d.missing_table_markers)
    return any(marker in lowered for marker in markers) and (
        "table" in lowered or "relation" in lowered
    )


def refuses_value(error: BaseException) -> bool:
    """Whether the driver's ``error`` refuses the data sent, not the connection: SQLSTATE
    class 22 (data exception) or 54 (program limit exceeded: a value too large) on
    PostgreSQL, a DB-API DataError elsewhere, or a server error code a dialect lists as
    refusing a value (``Dialect.value_errors``: MySQL/MariaDB raise most as OperationalError)."""
    sqlstate = getattr(error, "sqlstate", None) or ""
    if sqlstate[:2] in ("22", "54") or dbapi_class(error) == "DataError":
        return True
    code = error.args[0] if error.args else None
    return isinstance(code, int) and any(code in d.value_errors for d in DIALECTS.values())


#: The DB-API exception classes; what a driver's error is among them decides what it means.
_DBAPI_CLASSES = (
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
)


def dbapi_class(error: BaseException) -> str | None:
    """The DB-API class a driver's ``error`` belongs to (``OperationalError`` …), named as
    SQLAlchemy names its wrapper (the first such name in the class's MRO), or None when it is
    no driver error."""
    for cls in type(error).__mro__:
        if cls.__name__ in _DBAPI_CLASSES:
            return cls.__name__
    return None
