"""The ``migrate-cron`` console entry point.

cron runs ``migrate-cron enqueue NAME …`` every minute on every host, so this module imports
nothing at load time: the plain ``enqueue NAME`` goes down the lean path (``cli.lean``, no
Typer, Rich or command modules), every other command line to the full Typer CLI
(``cli.app``), which prints and exits exactly as before.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the installed ``migrate-cron`` command."""
    from migrate_cron.cli.lean import run

    code = run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from migrate_cron.cli.app import main as full_cli

    try:
        full_cli()
    finally:
        # The process ends here. CPython's shutdown runs one last full garbage collection over
        # every object still alive — for nothing, as the memory goes back with the process —
        # which after ``analyze`` on a 100,000-line crontab scans a million objects (0.1 s).
        # Frozen objects are left out of it.
        import gc

        gc.freeze()
