"""The worker: claims jobs, runs registry commands and Python handlers, records outcomes.

For application code, the public names are ``handler`` (decorator), ``Context`` and
``PermanentFailure`` (also importable from ``migrate_cron.handlers``). The loop itself is
``migrate_cron.worker.loop.Worker``; ``migrate-cron worker`` runs it.
"""

from __future__ import annotations

from migrate_cron.worker.handlers import Context, PermanentFailure, handler

__all__ = ["Context", "PermanentFailure", "handler"]
