"""Telling people when a job fails, as cron's MAILTO did: targets, events, transports and the
background sender the worker hands finished jobs to (see docs/notifications.md)."""
