"""``migrate-cron`` on a host whose clock is off: every Python-level wall clock in this process
(``time.time``, ``time.time_ns``, ``datetime.now``/``utcnow``/``today``) reads
``$MCT_CLOCK_SKEW`` seconds ahead (or behind, if negative) before the command starts.

The datetime class is swapped for a subclass whose metaclass keeps ``isinstance`` true for
real datetimes (values read from the database stay real ``datetime`` objects), the way
freezegun does it. Monotonic clocks are left alone: only wall time is skewed, as on a host
whose NTP is broken.

Usage: python skewed_cli.py worker --heartbeat 1 …   (MCT_CLOCK_SKEW=120)
"""

from __future__ import annotations

import datetime as _datetime_module
import os
import sys
import time
from typing import Any

SKEW = float(os.environ.get("MCT_CLOCK_SKEW", "0"))
_real_time = time.time
_real_time_ns = time.time_ns
_Real = _datetime_module.datetime
_DELTA = _datetime_module.timedelta(seconds=SKEW)


def _time() -> float:
    return _real_time() + SKEW


def _time_ns() -> int:
    return _real_time_ns() + int(SKEW * 1_000_000_000)


class _Meta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _Real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _Real)


class SkewedDatetime(_Real, metaclass=_Meta):
    __slots__ = ()  # same size as datetime: C extensions that check it stay quiet

    @classmethod
    def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
        return _Real.now(tz) + _DELTA

    @classmethod
    def utcnow(cls) -> Any:  # type: ignore[override]
        return _Real.utcnow() + _DELTA

    @classmethod
    def today(cls) -> Any:  # type: ignore[override]
        return _Real.today() + _DELTA


time.time = _time  # type: ignore[assignment]
time.time_ns = _time_ns  # type: ignore[assignment]
_datetime_module.datetime = SkewedDatetime  # type: ignore[misc]

if __name__ == "__main__":
    from migrate_cron.cli.main import main

    sys.argv = ["migrate-cron", *sys.argv[1:]]
    main()
