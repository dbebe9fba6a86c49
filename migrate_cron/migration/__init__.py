"""Moving crontab lines to the queue one at a time: names, registry merges, line switches,
rollback, verification and progress."""
