"""The database's clock as SQL, for every statement the store builds: "now", "now + s" and
the current hour on the server's clock (or an injected clock's, in tests), and "now" for a
statement built once and run many times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import BigInteger, BindParameter, ColumnElement, bindparam, literal

from migrate_cron.store.schema import UTCDateTime

if TYPE_CHECKING:
    from migrate_cron.clock import Clock
    from migrate_cron.store.dialects.entry import Dialect


class DatabaseClock:
    """Mixed into the store: the dialect gives ``_server_now``, ``_server_after`` and
    ``_server_hour``; an injected clock replaces them all."""

    _clock: Clock | None
    dialect: Dialect

    def now_sql(self) -> ColumnElement[datetime]:
        """Current time on the database's clock, as a SQL expression."""
        if self._clock is not None:
            return literal(self._clock.now(), UTCDateTime())
        return self._server_now()

    def reusable_now(self) -> ColumnElement[datetime]:
        """``now_sql`` for a statement built once and run many times. Where "now" is a value
        bound when the statement is built (an injected clock; SQLite, whose ``_server_now``
        is this process's clock), every run would write the build's time: there it is the
        parameter ``f_now``, which ``reusable_now_params`` fills at each run."""
        if self._clock is None and self.dialect.server_clock:
            return self._server_now()
        return bindparam("f_now", type_=UTCDateTime())

    def reusable_after(self) -> ColumnElement[datetime]:
        """``after_sql`` for a statement built once: the delay is the parameter ``f_after_us``
        (whole microseconds) added on the database's clock, or, where "now" is a bound value
        (``reusable_now``), the time itself, ``f_after``. ``reusable_after_params`` fills it."""
        if self._clock is None and self.dialect.server_clock:
            return self._server_after_param(bindparam("f_after_us", type_=BigInteger()))
        return bindparam("f_after", type_=UTCDateTime())

    def reusable_after_params(self, seconds: float) -> dict[str, Any]:
        """The parameter ``reusable_after`` needs for ``seconds`` from now."""
        if self._clock is not None:
            return {"f_after": self._clock.now() + timedelta(seconds=seconds)}
        if not self.dialect.server_clock:
            return {"f_after": datetime.now(UTC) + timedelta(seconds=seconds)}
        return {"f_after_us": round(seconds * 1_000_000)}

    def reusable_now_params(self) -> dict[str, Any]:
        """The parameters ``reusable_now`` needs for one run (none where the database reads
        its own clock)."""
        if self._clock is not None:
            return {"f_now": self._clock.now()}
        if not self.dialect.server_clock:
            return {"f_now": datetime.now(UTC)}
        return {}

    def after_sql(self, seconds: float) -> ColumnElement[datetime]:
        """``now + seconds`` on the database's clock."""
        if self._clock is not None:
            return literal(self._clock.now() + timedelta(seconds=seconds), UTCDateTime())
        return self._server_after(seconds)

    def hour_sql(self) -> ColumnElement[datetime]:
        """The start of the current UTC hour on the database's clock (a tally's period)."""
        if self._clock is not None:
            from migrate_cron.store.slot_write import hour_of

            return literal(hour_of(self._clock.now()), UTCDateTime())
        return self._server_hour()

    def _server_now(self) -> ColumnElement[datetime]:
        raise NotImplementedError

    def _server_hour(self) -> ColumnElement[datetime]:
        raise NotImplementedError

    def _server_after(self, seconds: float) -> ColumnElement[datetime]:
        raise NotImplementedError

    def _server_after_param(self, micros: BindParameter[int]) -> ColumnElement[datetime]:
        raise NotImplementedError
