"""An enqueue producer for the racing-schedulers test: what a crontab line rewritten to
``migrate-cron enqueue NAME --slot …`` does on every host, once per slot, as fast as a
compressed clock makes the slots fall due.

It calls the ``enqueue`` command's own function for each slot (registry load, slot
resolution, a fresh store per call like a process started by cron) without paying for a
Python start per call, and prints one JSON line per slot: ``{"slot": ISO, "created": bool}``.

Usage: python slot_producer.py JOB START_ISO ANCHOR_EPOCH SPEED UNTIL_ISO
(database URL, prefix and registry come from the MIGRATE_CRON_* environment variables.)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from datetime import datetime, timedelta


def main() -> None:
    from migrate_cron.cli.enqueue import enqueue

    job, start_iso, anchor, speed, until_iso = sys.argv[1:6]
    start = datetime.fromisoformat(start_iso)
    until = datetime.fromisoformat(until_iso)
    anchor_t, rate = float(anchor), float(speed)
    slot = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while slot <= until:
        now = start + timedelta(seconds=(time.time() - anchor_t) * rate)
        if slot > now:
            time.sleep(min(0.02, (slot - now).total_seconds() / rate))  # producer cadence
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            enqueue(
                job,
                slot=slot.isoformat(),
                quiet=False,
                as_json=False,
                database_url=os.environ["MIGRATE_CRON_DATABASE_URL"],
                table_prefix=os.environ.get("MIGRATE_CRON_TABLE_PREFIX", ""),
                registry=os.environ["MIGRATE_CRON_REGISTRY"],
            )
        said = out.getvalue().strip()
        if said not in ("enqueued", "already enqueued"):
            raise SystemExit(f"unexpected answer for {slot}: {said!r}")
        print(json.dumps({"slot": slot.isoformat(), "created": said == "enqueued"}), flush=True)
        slot += timedelta(minutes=1)


if __name__ == "__main__":
    main()
