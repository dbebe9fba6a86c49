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

    full_cli()
