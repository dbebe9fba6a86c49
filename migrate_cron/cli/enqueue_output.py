"""Saying what ``enqueue NAME`` came to (``producer.enqueue.Enqueued``), for both front ends:
the lean path cron takes and the Typer command. One function, so the two say it byte for byte
alike; it imports nothing of Typer or Rich unless ``--json`` is asked (only the Typer command
asks it)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from migrate_cron.producer.enqueue import Enqueued


def say(result: Enqueued) -> int:
    """Write the result's lines (stderr first, then stdout) and return its exit code; an
    outage kept for ``MIGRATE_CRON_DEBUG`` is raised once its line is said."""
    for line in result.stderr:
        sys.stderr.write(line)
        sys.stderr.flush()
    if result.debug_error is not None:
        raise result.debug_error
    if result.data is not None:
        from migrate_cron.cli.common import print_json

        print_json(result.data)
    elif result.stdout is not None:
        sys.stdout.write(result.stdout)
        sys.stdout.flush()
    return result.exit_code
