"""What one dashboard server is given: its database, its registry, whether actions are
allowed and with which token, and how its pages refresh."""

from __future__ import annotations

from dataclasses import dataclass, field

from migrate_cron.web.guard import ActionLog


@dataclass(frozen=True)
class WebConfig:
    database_url: str
    table_prefix: str = ""
    #: The registry file; None finds ``migrate-cron.toml`` like the CLI does.
    registry: str | None = None
    allow_actions: bool = False
    token: str | None = None
    #: The overview's default window for done counts and run times (seconds).
    window: float = 3600.0
    #: Seconds between the pages' refreshes (0: off).
    refresh: float = 5.0
    log: ActionLog = field(default_factory=ActionLog)
