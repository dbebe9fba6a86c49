"""Python job handlers for application code (see ``migrate_cron.worker.handlers``)::

    from migrate_cron.handlers import handler

    @handler("send-welcome-mail")
    def send_welcome_mail(payload, ctx):
        ...

Run them with ``migrate-cron worker --import myapp.jobs``.
"""

from __future__ import annotations

from migrate_cron.registry import Backoff
from migrate_cron.worker.handlers import Context, PermanentFailure, handler, load_handler

__all__ = ["Backoff", "Context", "PermanentFailure", "handler", "load_handler"]
