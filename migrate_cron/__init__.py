"""migrate-cron: move a legacy crontab, one line at a time, onto a job queue in your database."""

__version__ = "0.1.0"
