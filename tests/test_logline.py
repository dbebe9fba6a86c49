"""The log line's timestamp: ``Stamps`` (formatted once per second) writes what ``timestamp``
writes."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from migrate_cron.logline import Stamps, timestamp

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def test_stamps_match_timestamp_format_and_time() -> None:
    stamps = Stamps()
    for _ in range(3):
        before = datetime.now(UTC)
        ours, plain = stamps.now(), timestamp()
        after = datetime.now(UTC)
        assert STAMP.fullmatch(ours) and STAMP.fullmatch(plain)
        parsed = datetime.fromisoformat(ours.replace("Z", "+00:00"))
        assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after
        time.sleep(0.6)  # cross a second boundary at least once: the cached second moves on
