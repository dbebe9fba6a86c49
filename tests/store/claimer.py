"""A claiming process for the concurrency test: claims in batches until the queue is empty,
completes what it claimed, and prints the ids it completed as JSON plus any errors. It starts
claiming when the test opens the gate (``GATE/go``), after saying it is ready
(``GATE/ready-WORKER``): all start together, however slowly each process started."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from migrate_cron.store import open_store


def main(url: str, prefix: str, worker: str, batch: int, gate: Path) -> None:
    store = open_store(url, prefix=prefix)
    store.db_now()  # connected and SQLAlchemy loaded: what took a loaded machine longest
    (gate / f"ready-{worker}").touch()
    deadline = time.monotonic() + 120
    while not (gate / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    done: list[int] = []
    errors: list[str] = []
    empty_in_a_row = 0
    while empty_in_a_row < 3:
        try:
            jobs = store.claim(worker, batch, lease=300)
            if not jobs:
                empty_in_a_row += 1
                continue
            empty_in_a_row = 0
            ids = [j.id for j in jobs]
            if store.complete(worker, ids) != len(ids):
                errors.append(f"fenced out of {ids}")
            done.extend(ids)
        except Exception as exc:  # reported, the test asserts there are none
            errors.append(f"{type(exc).__name__}: {exc}")
            if len(errors) > 50:
                break
    json.dump({"done": done, "errors": errors}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5]))
