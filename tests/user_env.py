"""The environment a user's shell has: none of the MIGRATE_CRON_* settings the test session
may carry, only those a test gives. ``run_cli`` merges what it is given into the session's
environment, so a setting is taken out by an empty value (every reader of these settings
treats empty as not set: Click's envvar, ``os.environ.get(...) or default``)."""

from __future__ import annotations

import os


def user_env(**settings: str) -> dict[str, str]:
    env = {k: "" for k in os.environ if k.startswith("MIGRATE_CRON_")}
    env["COLUMNS"] = ""
    env.update(settings)
    return env
