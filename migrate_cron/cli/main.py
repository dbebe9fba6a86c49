"""The ``migrate-cron`` console entry point.

cron runs ``migrate-cron enqueue NAME …`` every minute on every host, so this module imports
nothing at load time: the plain ``enqueue NAME`` goes down the lean path (``cli.lean``, no
Typer, Rich or command modules), every other command line to the full Typer CLI
(``cli.app``), which prints and exits exactly as before.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def hide_url_secret(argv: Sequence[str]) -> None:
    """Show a masked command line in ``ps`` when ``--database-url`` carries a password.

    Any user of the host can read every process's command line (``/proc/PID/cmdline``), so a
    worker started with ``--database-url postgresql://app:PW@…`` showed its password to all of
    them for as long as it ran. The process title is rewritten before any work (the arguments
    themselves were already read); the environment variable or ``~/.pgpass`` remain the way
    that never shows it, even for the first milliseconds.
    """
    if not any(arg.startswith("--database-url") for arg in argv):
        return  # the cron line and almost every call: no import, no cost
    from migrate_cron.config import mask_url

    masked = [mask_url(arg) for arg in argv]
    if masked == list(argv):
        return
    import setproctitle

    setproctitle.setproctitle(" ".join(masked))


def main() -> None:
    """Entry point of the installed ``migrate-cron`` command."""
    import gc

    hide_url_secret(sys.argv)

    # The cron line lives ~0.2 s and allocates little besides its imports: the cyclic
    # collector's passes over ~340 freshly imported modules (PostgreSQL's) are pure cost there,
    # 5–9 ms a call. Reference counting still frees everything else; every other command runs
    # with the collector on.
    collecting = gc.isenabled()
    gc.disable()
    try:
        from migrate_cron.cli.lean import run

        code = run(sys.argv[1:])
        if code is not None:
            sys.exit(code)
        if collecting:
            gc.enable()
        from migrate_cron.cli.app import main as full_cli

        full_cli()
    finally:
        # The process ends here. CPython's shutdown runs one last full garbage collection over
        # every object still alive — for nothing, as the memory goes back with the process.
        # After ``analyze`` on a 100,000-line crontab it scans a million objects (0.1 s); on
        # the cron line, after psycopg's import, it was ~25 ms of a ~200 ms call. Frozen
        # objects are left out of it; everything else about the exit (atexit handlers,
        # flushing, closing) is unchanged.
        gc.freeze()
        if collecting:
            gc.enable()
