"""Crontab files and cron schedules, read exactly as Debian/Vixie cron reads them."""

from __future__ import annotations

from migrate_cron.crontab.fields import ScheduleError
from migrate_cron.crontab.schedule import Schedule

__all__ = ["Schedule", "ScheduleError"]
